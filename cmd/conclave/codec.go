package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/conclave-ai/conclave/codec"
)

// withCodec turns on payload encryption for a client (and the workers
// built on it) when CONCLAVE_CODEC_KEY is set.
func withCodec(o client.Options) (client.Options, error) {
	c, ok, err := codec.FromEnv(os.Getenv)
	if err != nil || !ok {
		return o, err
	}
	return codec.ClientOptions(o, c), nil
}

// maxCodecRequest bounds a request body: the Web UI sends one event's
// payloads at a time, far below this.
const maxCodecRequest = 16 << 20

// codecHandler serves /encode and /decode for the Temporal Web UI and CLI.
// Browsers may call it only from uiOrigins; requests without an Origin
// header (the temporal CLI's --codec-endpoint) are served as they are.
func codecHandler(c converter.PayloadCodec, uiOrigins []string) http.Handler {
	next := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Origin")
		if origin := r.Header.Get("Origin"); origin != "" {
			if !slices.Contains(uiOrigins, origin) {
				// A page elsewhere must not use the key, even blind.
				http.Error(w, fmt.Sprintf("origin %s is not allowed; add it with --ui-origin %s", origin, origin), http.StatusForbidden)
				return
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "content-type,x-namespace,authorization")
			h.Set("Access-Control-Max-Age", "600")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxCodecRequest)
		next.ServeHTTP(w, r)
	})
}

// codecReadTimeout bounds reading one request, body included: a client
// that sends its body a byte at a time would otherwise hold a connection
// (and its goroutine) open for as long as it likes.
const codecReadTimeout = 30 * time.Second

// codecServer is the codec's HTTP server, every phase of a request bounded.
func codecServer(h http.Handler, readTimeout time.Duration) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout,
		WriteTimeout: 2 * readTimeout, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// exposedWarning is the warning for a listen address that is not loopback:
// anyone who can reach the port can decrypt every payload.
func exposedWarning(listen string) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	where := host
	if host == "" || host == "0.0.0.0" || host == "::" {
		where = "every interface"
	}
	return fmt.Sprintf("conclave codec-server: WARNING: listening on %s (--listen %s): anyone who can reach this port can decrypt every payload; "+
		"serve on loopback (--listen 127.0.0.1:8081) or put authentication in front", where, listen)
}

func newCodecServerCmd() *cobra.Command {
	var listen string
	var uiOrigins []string
	cmd := &cobra.Command{
		Use:   "codec-server",
		Short: "Serve the payload codec so the Temporal Web UI can show encrypted payloads",
		Long: "Decrypts (and encrypts) payloads for the Temporal Web UI and the temporal CLI,\n" +
			"with the key in " + codec.KeyEnv + " (and retired keys in " + codec.OldKeysEnv + ").\n" +
			"Point the Web UI at it with `temporal server start-dev --ui-codec-endpoint\n" +
			"http://127.0.0.1:8081`, or in the UI's Codec Server settings. Anyone who can\n" +
			"reach it can decrypt: keep it on loopback, or put authentication in front.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ok, err := codec.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%s is not set; a codec server needs the key the workers encrypt with (32 bytes, base64 or hex)", codec.KeyEnv)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("codec server: listen on %s: %w; pick another address with --listen", listen, err)
			}
			srv := codecServer(codecHandler(c, uiOrigins), codecReadTimeout)
			if warning := exposedWarning(listen); warning != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), warning)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "conclave codec-server: http://%s (key %s), for the Web UI at %s\n", ln.Addr(), c.KeyID(), strings.Join(uiOrigins, ", "))
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			select {
			case err := <-errc:
				return fmt.Errorf("codec server: %w", err)
			case <-cmd.Context().Done():
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("codec server: shut down: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8081", "host:port to serve on")
	cmd.Flags().StringSliceVar(&uiOrigins, "ui-origin", []string{"http://127.0.0.1:8233", "http://localhost:8233"},
		"origins of the Temporal Web UI that may call it, scheme://host:port as the browser's address bar shows it (repeat or comma-separate)")
	return cmd
}
