package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultKeyEnvsAreProviders(t *testing.T) {
	names := DefaultKeyEnvs()
	for _, want := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "XAI_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY", "AZURE_OPENAI_API_KEY", "VLLM_API_KEY"} {
		assert.Contains(t, names, want)
	}
	for _, p := range Providers() {
		if p.KeyEnv != "" {
			_, denied := DeniedKeyEnv(p.KeyEnv)
			assert.False(t, denied, "%s's key variable %s must not be denied", p.Type, p.KeyEnv)
		}
	}
	for _, h := range hostKeyEnvs {
		assert.Contains(t, names, h.env, "chatcompletion's key for %s", h.host)
	}
}

func TestDeniedKeyEnv(t *testing.T) {
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "CONCLAVE_CODEC_KEY", "TEMPORAL_TLS_KEY", "OTEL_EXPORTER_OTLP_HEADERS", "PATH", "HOME", "AZURE_CLIENT_SECRET", "GOOGLE_APPLICATION_CREDENTIALS", "PGPASSWORD", "DATABASE_URL", "MINIO_ROOT_PASSWORD", "aws_secret_access_key"} {
		_, denied := DeniedKeyEnv(name)
		assert.True(t, denied, name)
	}
	for _, name := range []string{"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "MISTRAL_API_KEY", "TEAM_OPENAI_KEY", "PATHOLOGY_KEY"} {
		_, denied := DeniedKeyEnv(name)
		assert.False(t, denied, name)
	}
	rule, _ := DeniedKeyEnv("AWS_SECRET_ACCESS_KEY")
	assert.Equal(t, "AWS_*", rule)
}

func TestNewEgress(t *testing.T) {
	e, err := NewEgress([]string{" MISTRAL_API_KEY ", ""}, []string{"API.Mistral.ai", "127.0.0.1:8000"})
	require.NoError(t, err)
	assert.Contains(t, e.KeyEnvs(), "MISTRAL_API_KEY")
	assert.Contains(t, e.KeyEnvs(), "OPENAI_API_KEY")
	assert.Equal(t, []string{"api.mistral.ai", "127.0.0.1:8000"}, e.Hosts())

	for _, c := range []struct {
		keys, hosts []string
		want        string
	}{
		{keys: []string{"AWS_SECRET_ACCESS_KEY"}, want: "AWS_SECRET_ACCESS_KEY is refused: AWS_*"},
		{keys: []string{"CONCLAVE_CODEC_KEY"}, want: "CONCLAVE_*"},
		{keys: []string{"PATH"}, want: "PATH is refused"},
		{keys: []string{"sk-live-abc"}, want: "not a variable name"},
		{hosts: []string{"https://api.mistral.ai/v1"}, want: "not a URL"},
	} {
		_, err := NewEgress(c.keys, c.hosts)
		assert.ErrorContains(t, err, c.want)
	}
}

func TestEgressCheck(t *testing.T) {
	env := func(string) string { return "" }
	open, err := NewEgress([]string{"TEAM_KEY"}, nil)
	require.NoError(t, err)
	hosts, err := NewEgress([]string{"TEAM_KEY"}, []string{"api.openai.com", "*.example.com", "127.0.0.1:8000"})
	require.NoError(t, err)
	backend := func(url, key string) Backend {
		return Backend{Type: "openai", Model: "m", BaseURL: url, APIKeyEnv: key}
	}

	for _, c := range []struct {
		name string
		e    Egress
		b    Backend
		want string // "" means allowed
	}{
		{"default provider key", Egress{}, backend("", "OPENAI_API_KEY"), ""},
		{"another provider's key", Egress{}, backend("http://127.0.0.1:1/v1", "GEMINI_API_KEY"), ""},
		{"no key", Egress{}, backend("http://127.0.0.1:1/v1", ""), ""},
		{"infrastructure", Egress{}, backend("http://127.0.0.1:1/v1", "AWS_SECRET_ACCESS_KEY"), "api_key_env AWS_SECRET_ACCESS_KEY is refused"},
		{"codec key", open, backend("", "CONCLAVE_CODEC_KEY"), "CONCLAVE_*"},
		{"not allowed", Egress{}, backend("", "TEAM_KEY"), "--allow-key-env TEAM_KEY"},
		{"allowed by the worker", open, backend("", "TEAM_KEY"), ""},
		{"any host without a list", open, backend("http://10.0.0.1:9/v1", "TEAM_KEY"), ""},
		{"openai's default host", hosts, backend("", "OPENAI_API_KEY"), ""},
		{"listed host", hosts, backend("https://API.openai.com/v1", "OPENAI_API_KEY"), ""},
		{"subdomain", hosts, backend("https://llm.example.com/v1", "TEAM_KEY"), ""},
		{"the wildcard's own domain", hosts, backend("https://example.com/v1", "TEAM_KEY"), "model host example.com"},
		{"lookalike domain", hosts, backend("https://evilexample.com/v1", "TEAM_KEY"), "model host evilexample.com"},
		{"listed loopback port", hosts, backend("http://127.0.0.1:8000/v1", ""), ""},
		{"other loopback port", hosts, backend("http://127.0.0.1:8001/v1", ""), "model host 127.0.0.1:8001"},
		{"unlisted loopback", hosts, backend("http://localhost:8000/v1", ""), "model host localhost:8000"},
		{"unlisted host", hosts, backend("https://collector.attacker.test/v1", "OPENAI_API_KEY"), "collector.attacker.test is not one this worker calls"},
		{"azure endpoint from the worker", hosts, Backend{Type: "azure_openai", Model: "m", APIKeyEnv: "AZURE_OPENAI_API_KEY"}, "needs an endpoint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.e.Check(c.b, env)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// docs/security.md lists what the worker allows and refuses; it must not
// fall behind the code.
func TestEgressDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	require.NoError(t, err)
	doc := string(data)
	for _, name := range DefaultKeyEnvs() {
		assert.Contains(t, doc, "`"+name+"`", "allowed by default")
	}
	for _, p := range deniedKeyEnvPrefixes {
		assert.Contains(t, doc, "`"+p+"`", "denied prefix")
	}
	for _, name := range deniedKeyEnvs {
		if !strings.HasSuffix(name, "_PROXY") {
			assert.Contains(t, doc, "`"+name+"`", "denied name")
		}
	}
}
