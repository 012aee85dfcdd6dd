package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Egress is a worker's own rule for what a session's backends may use. The
// config comes with the session, from whoever can start workflows; without
// this rule, api_key_env could name any variable of the worker (S3
// credentials, the payload-encryption key) and base_url send it anywhere.
// The zero value allows the providers' key variables and any host.
type Egress struct {
	keyEnvs []string
	hosts   []string
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
	if len(e.hosts) == 0 {
		return nil
	}
	baseURL, err := b.ResolveBaseURL(getenv)
	if err != nil {
		return err
	}
	host, port, shown := "api.openai.com", "", "api.openai.com"
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || u.Hostname() == "" {
			return fmt.Errorf("base_url is not a URL with a host; this worker only calls the model hosts it allows")
		}
		host, port, shown = strings.ToLower(u.Hostname()), u.Port(), strings.ToLower(u.Host)
	}
	if !e.hostAllowed(host, port) {
		return fmt.Errorf("model host %s is not one this worker calls (allowed: %s); use one of them, or ask the worker's operator to allow it (conclave worker --allow-model-host %s)",
			shown, strings.Join(e.hosts, ", "), shown)
	}
	return nil
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
