package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/serve"
)

func newServeCmd() *cobra.Command {
	var tf temporalFlags
	var lf logFlags
	var configs []string
	var listen, keysFile string
	opts := serve.Options{}
	cmd := &cobra.Command{
		Use:   "serve --config TEAM.yaml [--config NAME=TEAM.yaml …] [--listen 127.0.0.1:4000]",
		Short: "Serve teams as OpenAI-compatible models (/v1/chat/completions, /v1/responses)",
		Long: "Each --config is one model id: NAME=FILE, else the file's `name:` key, else its base name.\n" +
			"Every request starts an ordinary Coordination workflow (the response id is its id), so a\n" +
			"run survives the client and this process. API keys come from CONCLAVE_API_KEYS or\n" +
			"--api-keys-file (NAME:KEY, comma- or line-separated); without keys it listens on loopback only.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger, err := lf.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if len(configs) == 0 {
				return errors.New("give at least one --config TEAM.yaml")
			}
			for _, spec := range configs {
				team, warnings, err := serve.LoadTeam(spec)
				if err != nil {
					return err
				}
				for _, w := range warnings {
					if !w.Note {
						logger.Warn("config", "model", team.Name, "warning", w.String())
					}
				}
				opts.Teams = append(opts.Teams, team)
			}
			if opts.Keys, err = apiKeys(keysFile); err != nil {
				return err
			}
			if err := serve.CheckListen(listen, len(opts.Keys) > 0); err != nil {
				return err
			}
			o, err := withCodec(client.Options{})
			if err != nil {
				return err
			}
			opts.DataConverter = o.DataConverter
			c, err := tf.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			opts.Client, opts.TaskQueue, opts.Logger = c, tf.taskQueue, logger
			opts.KeySearchAttribute = hasSearchAttribute(ctx, c, tf.namespace, contract.SearchAttrServeKey)
			if !opts.KeySearchAttribute {
				logger.Warn("search attribute " + contract.SearchAttrServeKey + " is not registered: runs are started without the key's name as a search attribute " +
					"(temporal operator search-attribute create --name " + contract.SearchAttrServeKey + " --type Keyword)")
			}
			srv, err := serve.New(ctx, opts)
			if err != nil {
				return err
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
			names := make([]string, 0, len(opts.Teams))
			for _, t := range opts.Teams {
				names = append(names, t.Name)
			}
			logger.Info("serving", "url", "http://"+ln.Addr().String()+"/v1", "models", names, "keys", len(opts.Keys), "temporal", tf.address, "namespace", tf.namespace)
			go func() {
				<-ctx.Done()
				// Open streams end; their runs go on in Temporal.
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = hs.Shutdown(sctx)
			}()
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	tf.add(cmd)
	lf.add(cmd, "info")
	cmd.Flags().StringArrayVar(&configs, "config", nil, "team config, FILE or NAME=FILE; repeat for several teams (required)")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:4000", "address to listen on; beyond loopback only with API keys")
	cmd.Flags().StringVar(&keysFile, "api-keys-file", "", "file of API keys, NAME:KEY per line; replaces env CONCLAVE_API_KEYS, which is then not read")
	cmd.Flags().Int64Var(&opts.MaxRequestBytes, "max-request-bytes", serve.DefaultMaxRequestBytes, "largest request body; larger ones get 413")
	cmd.Flags().IntVar(&opts.MaxMessages, "max-messages", serve.DefaultMaxMessages, "most messages in one conversation")
	cmd.Flags().IntVar(&opts.MaxRunsPerKey, "max-runs-per-key", serve.DefaultMaxRunsPerKey, "runs in progress per API key; more get 429")
	cmd.Flags().IntVar(&opts.MaxStreamsPerKey, "max-streams-per-key", serve.DefaultMaxStreamsPerKey, "open streams and foreground waits per API key; more get 429")
	cmd.Flags().IntVar(&opts.MaxRuns, "max-runs", serve.DefaultMaxRuns, "runs in progress for the whole server; more get 503")
	return cmd
}

// apiKeys reads the keys from --api-keys-file, else CONCLAVE_API_KEYS.
func apiKeys(file string) ([]serve.Key, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--api-keys-file: %w", err)
		}
		keys, err := serve.ParseKeys(string(data), file)
		if err == nil && len(keys) == 0 {
			err = fmt.Errorf("--api-keys-file %s holds no key; write NAME:KEY lines", file)
		}
		return keys, err
	}
	return serve.ParseKeys(os.Getenv("CONCLAVE_API_KEYS"), "CONCLAVE_API_KEYS")
}

func hasSearchAttribute(ctx context.Context, c client.Client, namespace, name string) bool {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return false
	}
	_, ok := resp.GetCustomAttributes()[name]
	return ok
}
