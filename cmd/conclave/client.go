package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/log"
)

// Defaults when neither a flag, a variable nor a profile names them.
const (
	defaultAddress   = "127.0.0.1:7233"
	defaultNamespace = "default"
)

// temporalFlags are the connection flags shared by every command that talks
// to Temporal. They read Temporal's standard client configuration the way the
// temporal CLI does: a flag wins over its TEMPORAL_* variable, which wins over
// the profile of the TOML config file (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE).
type temporalFlags struct {
	address, namespace, taskQueue, ui string

	apiKey, profile, configFile                       string
	tls, tlsNoVerify                                  bool
	tlsCertPath, tlsKeyPath, tlsCAPath, tlsServerName string

	// flags is set by add; flags built as literals (a dev server this
	// process started) dial exactly address and namespace, in plaintext.
	flags *pflag.FlagSet
	// logger receives the SDK's logs; nil keeps a CLI's output quiet.
	logger log.Logger
	// configure, when set, adds to the options before dialing (metrics,
	// tracing).
	configure func(client.Options) (client.Options, error)
}

func (f *temporalFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.flags = fs
	fs.StringVar(&f.address, "address", "", "Temporal frontend host:port (env TEMPORAL_ADDRESS; default "+defaultAddress+")")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "Temporal namespace (env TEMPORAL_NAMESPACE; default \""+defaultNamespace+"\")")
	fs.StringVar(&f.apiKey, "api-key", "", "API key for Temporal Cloud or a cluster that checks keys; implies TLS (env TEMPORAL_API_KEY, preferred: flags show in process lists)")
	fs.BoolVar(&f.tls, "tls", false, "connect with TLS (env TEMPORAL_TLS); implied by any --tls-* flag or an API key")
	fs.StringVar(&f.tlsCertPath, "tls-cert-path", "", "client certificate for mTLS, PEM (env TEMPORAL_TLS_CLIENT_CERT_PATH)")
	fs.StringVar(&f.tlsKeyPath, "tls-key-path", "", "client private key for mTLS, PEM (env TEMPORAL_TLS_CLIENT_KEY_PATH)")
	fs.StringVar(&f.tlsCAPath, "tls-ca-path", "", "CA certificate that signed the server's, PEM; default: the system's roots (env TEMPORAL_TLS_SERVER_CA_CERT_PATH)")
	fs.StringVar(&f.tlsServerName, "tls-server-name", "", "server name to verify the server's certificate against (env TEMPORAL_TLS_SERVER_NAME)")
	fs.BoolVar(&f.tlsNoVerify, "tls-disable-host-verification", false, "accept any server certificate; for tests only (env TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)")
	fs.StringVar(&f.profile, "profile", "", "profile of the client config file (env TEMPORAL_PROFILE; default \"default\")")
	fs.StringVar(&f.configFile, "config-file", "", "Temporal client config file, TOML (env TEMPORAL_CONFIG_FILE; default the temporal CLI's, e.g. ~/.config/temporalio/temporal.toml)")
	fs.StringVar(&f.taskQueue, "task-queue", "conclave", "task queue of the Conclave workers")
}

func (f *temporalFlags) addUI(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.ui, "ui", envOr("CONCLAVE_UI", defaultUI), "Temporal Web UI base URL, for links (env CONCLAVE_UI)")
}

// options resolves the client options; afterwards address and namespace
// hold the values in use, for messages and links.
func (f *temporalFlags) options() (client.Options, error) {
	if f.flags == nil {
		return client.Options{HostPort: f.address, Namespace: f.namespace}, nil
	}
	if f.configFile != "" {
		if _, err := os.Stat(f.configFile); err != nil {
			return client.Options{}, fmt.Errorf("--config-file: %w", err)
		}
	}
	// The standard loader reads any value it cannot parse (TEMPORAL_TLS=yes)
	// as false, which would dial in plaintext without a word.
	for _, name := range []string{"TEMPORAL_TLS", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		if v, ok := os.LookupEnv(name); ok {
			if _, err := strconv.ParseBool(v); err != nil {
				return client.Options{}, fmt.Errorf("%s=%q is not true or false; set it to true (TLS) or false (plaintext)", name, v)
			}
		}
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath: f.configFile, ConfigFileProfile: f.profile,
	})
	if err != nil {
		return client.Options{}, fmt.Errorf("read the Temporal client configuration: %w", err)
	}
	changed := f.flags.Changed
	if changed("address") {
		prof.Address = f.address
	}
	if changed("namespace") {
		prof.Namespace = f.namespace
	}
	if changed("api-key") {
		prof.APIKey = f.apiKey
	}
	tlsConf := func() *envconfig.ClientConfigTLS {
		if prof.TLS == nil {
			prof.TLS = &envconfig.ClientConfigTLS{}
		}
		return prof.TLS
	}
	if changed("tls") {
		tlsConf().Disabled = !f.tls
	}
	for name, set := range map[string]func(){
		"tls-cert-path":                 func() { tlsConf().ClientCertPath, tlsConf().ClientCertData = f.tlsCertPath, nil },
		"tls-key-path":                  func() { tlsConf().ClientKeyPath, tlsConf().ClientKeyData = f.tlsKeyPath, nil },
		"tls-ca-path":                   func() { tlsConf().ServerCACertPath, tlsConf().ServerCACertData = f.tlsCAPath, nil },
		"tls-server-name":               func() { tlsConf().ServerName = f.tlsServerName },
		"tls-disable-host-verification": func() { tlsConf().DisableHostVerification = f.tlsNoVerify },
	} {
		if changed(name) {
			set()
		}
	}
	if prof.TLS != nil && prof.TLS.Disabled && (prof.APIKey != "" || prof.TLS.ClientCertPath != "" || len(prof.TLS.ClientCertData) > 0) {
		return client.Options{}, errors.New("TLS is turned off (TEMPORAL_TLS=false or --tls=false) but an API key or a client certificate is set; " +
			"they are never sent in plaintext: turn TLS on or remove them")
	}
	if prof.Address == "" {
		prof.Address = defaultAddress
	}
	if prof.Namespace == "" {
		prof.Namespace = defaultNamespace
	}
	f.address, f.namespace = prof.Address, prof.Namespace
	o, err := prof.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("the Temporal client configuration: %w", err)
	}
	return o, nil
}

// usesTLS says whether options dial with TLS.
func usesTLS(o client.Options) bool {
	return o.ConnectionOptions.TLS != nil && !o.ConnectionOptions.TLSDisabled
}

// dial connects to Temporal; the error says which address, namespace and
// transport were tried, and what to change.
func (f *temporalFlags) dial() (client.Client, error) {
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	if o, err = withCodec(o); err != nil {
		return nil, err
	}
	if f.configure != nil {
		if o, err = f.configure(o); err != nil {
			return nil, err
		}
	}
	o.Logger = f.logger
	if o.Logger == nil {
		o.Logger = quietLogger{}
	}
	c, err := client.Dial(o)
	if err != nil {
		return nil, f.dialError(o, err)
	}
	return c, nil
}

// dialError names the likely cause of a failed dial. A server that
// answers a TLS handshake while we spoke plaintext needs TLS turned on;
// that is the common mistake with Temporal Cloud and secured clusters.
func (f *temporalFlags) dialError(o client.Options, err error) error {
	where := fmt.Sprintf("Temporal at %s (namespace %s", f.address, f.namespace)
	if usesTLS(o) {
		where += ", TLS)"
		hint := "check the address, the CA (--tls-ca-path), the client certificate or API key"
		if len(o.ConnectionOptions.TLS.Certificates) == 0 && o.Credentials == nil {
			hint = "no client certificate or API key was given, and the server may require one " +
				"(--tls-cert-path and --tls-key-path, or TEMPORAL_API_KEY); else check the address and the CA (--tls-ca-path)"
		}
		return &detailedError{msg: fmt.Sprintf("connect to %s failed: %s; %s", where, briefCause(err), hint), err: err}
	}
	where += ", plaintext)"
	if speaksTLS(f.address) {
		return &detailedError{msg: fmt.Sprintf("connect to %s failed: the server requires TLS; "+
			"set TEMPORAL_TLS=true or --tls (and the client certificate or API key it expects)", where), err: err}
	}
	return &detailedError{msg: fmt.Sprintf("connect to %s failed: %s; is the server running? (`conclave dev` starts one)",
		where, briefCause(err)), err: err}
}

// speaksTLS tells whether the server at addr completes (or answers) a TLS
// handshake. Certificates are not checked: nothing is sent but a hello.
func speaksTLS(addr string) bool {
	d := &net.Dialer{Timeout: 3 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := (&tls.Dialer{NetDialer: d, Config: &tls.Config{InsecureSkipVerify: true}}).DialContext(ctx, "tcp", addr) //nolint:gosec // a probe, no data sent
	if err == nil {
		conn.Close()
		return true
	}
	var alert tls.AlertError
	return errors.As(err, &alert)
}

func (f *temporalFlags) link(workflowID string) string {
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", f.ui, f.namespace, workflowID)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// quietLogger keeps the SDK's informational logs out of a CLI's output;
// warnings and errors still reach stderr.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal warning:", msg}, kv...)...)
}
func (quietLogger) Error(msg string, kv ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"temporal error:", msg}, kv...)...)
}
