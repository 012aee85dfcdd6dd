package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Egress is a worker's own rule for what a session's backends may use. The
// config comes with the session, from whoever can start workflows; without
// this rule, api_key_env could name any variable of the worker (S3
// credentials, the payload-encryption key) and base_url send it anywhere.
// The zero value allows the providers' key variables and any public host,
// and loopback (a developer's machine: dev, demo, step mode); never a
// link-local or cloud metadata address.
type Egress struct {
	keyEnvs []string
	hosts   []string
	private PrivateHosts
}

// PrivateHosts says which non-public addresses a worker's models may be on
// when they are not listed among its model hosts.
type PrivateHosts int

const (
	// LoopbackHosts allows this machine only: the default of dev, demo
	// and step mode, which run on a developer's machine.
	LoopbackHosts PrivateHosts = iota
	// NoPrivateHosts allows neither: the default of conclave worker, whose
	// sessions come from whoever may start workflows.
	NoPrivateHosts
	// AllPrivateHosts allows loopback and private ranges.
	AllPrivateHosts
)

// WithPrivateHosts returns e calling the non-public addresses p allows.
func (e Egress) WithPrivateHosts(p PrivateHosts) Egress {
	e.private = p
	return e
}

// deniedKeyEnvPrefixes and deniedKeyEnvs are the worker's infrastructure:
// storage and cloud credentials, Temporal and Conclave settings, process
// plumbing. Their values are never sent to a model, even if an operator
// allows them: a provider's key variable never looks like these.
var (
	deniedKeyEnvPrefixes = []string{
		"AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "CLOUDSDK_", "TEMPORAL_", "CONCLAVE_", "OTEL_",
		"MINIO_", "S3_", "KUBERNETES_", "DOCKER_", "GITHUB_", "GIT_", "SSH_", "GPG_", "VAULT_",
		"DATABASE_", "POSTGRES_", "MYSQL_", "REDIS_", "LD_", "DYLD_",
	}
	deniedKeyEnvs = []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "HOSTNAME", "TMPDIR",
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
		"PGPASSWORD", "PGUSER", "PGHOST", "PGPASSFILE", "DATABASE_URL", "REDIS_URL",
	}
)

// DefaultKeyEnvs lists the variables every worker lets a backend read a key
// from: each provider's documented key variable (Providers). Sorted.
func DefaultKeyEnvs() []string {
	var names []string
	for _, p := range providers {
		if p.KeyEnv != "" && !slices.Contains(names, p.KeyEnv) {
			names = append(names, p.KeyEnv)
		}
	}
	slices.Sort(names)
	return names
}

// DeniedKeyEnv reports whether name is an infrastructure variable whose
// value never leaves the worker, and the rule that says so (a prefix such
// as "AWS_*", or the name itself).
func DeniedKeyEnv(name string) (rule string, denied bool) {
	if slices.Contains(DefaultKeyEnvs(), name) {
		return "", false // AZURE_OPENAI_API_KEY is a model key
	}
	upper := strings.ToUpper(name)
	for _, p := range deniedKeyEnvPrefixes {
		if strings.HasPrefix(upper, p) {
			return p + "*", true
		}
	}
	if slices.Contains(deniedKeyEnvs, upper) {
		return upper, true
	}
	return "", false
}

// NewEgress builds a worker's rule: the default key variables plus
// keyEnvs, and, when hosts is not empty, only those model hosts. It refuses
// an infrastructure variable or a malformed entry, naming it.
func NewEgress(keyEnvs, hosts []string) (Egress, error) {
	var e Egress
	for _, name := range keyEnvs {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !envPattern.MatchString(name) {
			return Egress{}, fmt.Errorf("allowed key variable %q is not a variable name in upper case, e.g. MISTRAL_API_KEY", name)
		}
		if rule, denied := DeniedKeyEnv(name); denied {
			return Egress{}, fmt.Errorf("allowed key variable %s is refused: %s is the worker's infrastructure (storage, Temporal, cloud or process settings), never sent to a model; keep model keys in variables of their own", name, rule)
		}
		e.keyEnvs = append(e.keyEnvs, name)
	}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if strings.Contains(h, "/") || strings.Contains(h, "@") {
			return Egress{}, fmt.Errorf("allowed model host %q must be a host name, host:port or *.domain, not a URL", h)
		}
		e.hosts = append(e.hosts, h)
	}
	return e, nil
}

// KeyEnvs returns the variables this worker lets backends read keys from.
func (e Egress) KeyEnvs() []string {
	names := append(DefaultKeyEnvs(), e.keyEnvs...)
	slices.Sort(names)
	return slices.Compact(names)
}

// Hosts returns the allowed model hosts; empty means any host.
func (e Egress) Hosts() []string { return slices.Clone(e.hosts) }

// Check refuses a backend whose key variable this worker does not allow, or
// whose endpoint (ResolveBaseURL through getenv) is not an allowed host.
// Messages name the variable or host, never a value.
func (e Egress) Check(b Backend, getenv func(string) string) error {
	if name := b.APIKeyEnv; name != "" {
		if rule, denied := DeniedKeyEnv(name); denied {
			return fmt.Errorf("api_key_env %s is refused by this worker: %s is the worker's infrastructure, never sent to a model; name the variable that holds the model's key, e.g. %s", name, rule, DefaultAPIKeyEnv)
		}
		if !slices.Contains(e.KeyEnvs(), name) {
			return fmt.Errorf("api_key_env %s is not a key variable this worker allows; use a provider's variable (e.g. %s), or ask the worker's operator to allow it (conclave worker --allow-key-env %s)", name, DefaultAPIKeyEnv, name)
		}
	}
	baseURL, err := b.ResolveBaseURL(getenv)
	if err != nil {
		return err
	}
	if baseURL == "" {
		baseURL = "https://api.openai.com"
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("base_url is not a URL with a host; this worker only calls the model hosts it allows")
	}
	return e.CheckURL(u)
}

// CheckURL refuses a request to u (a base_url, or where a model server
// redirects) whose host this worker does not call: a link-local or
// metadata host in any spelling, or, when the worker lists its model
// hosts, one not listed. The addresses a name resolves to are checked
// when connecting (CheckAddress).
func (e Egress) CheckURL(u *url.URL) error {
	host, port, shown := strings.ToLower(u.Hostname()), u.Port(), strings.ToLower(u.Host)
	if ClassifyHost(host) == LinkLocal {
		return fmt.Errorf("model %s", refusedHost(shown))
	}
	if len(e.hosts) > 0 && !e.hostAllowed(host, port) {
		return fmt.Errorf("model host %s is not one this worker calls (allowed: %s); use one of them, or ask the worker's operator to allow it (conclave worker --allow-model-host %s)",
			shown, strings.Join(e.hosts, ", "), shown)
	}
	return nil
}

// CheckAddress is asked for every connection to a model host, with the
// address it resolved to: link-local and metadata addresses are never
// called; loopback and private ones only when the host is listed among the
// worker's model hosts or the worker allows them (WithPrivateHosts).
func (e Egress) CheckAddress(host, port string, ip netip.Addr) error {
	class := ClassifyAddress(ip)
	switch {
	case class == Public:
		return nil
	case class == LinkLocal:
		return fmt.Errorf("model host %s resolves to %s, a link-local or cloud metadata address, which no worker ever calls", host, ip)
	case len(e.hosts) > 0 && e.hostAllowed(strings.ToLower(host), port):
		return nil
	case e.private == AllPrivateHosts, e.private == LoopbackHosts && class == Loopback:
		return nil
	}
	return fmt.Errorf("model host %s resolves to %s, a %s address, which this worker does not call; its operator can allow it (conclave worker --allow-private-model-hosts, or --allow-model-host %s)",
		host, ip, class, host)
}

// hostAllowed matches a host against the list: an exact name, a name with
// its port, or *.domain for any subdomain. Loopback and other addresses
// only match when listed as they are.
func (e Egress) hostAllowed(host, port string) bool {
	for _, h := range e.hosts {
		switch {
		case h == host:
			return true
		case port != "" && h == net.JoinHostPort(host, port):
			return true
		case strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) && net.ParseIP(host) == nil:
			return true
		}
	}
	return false
}
