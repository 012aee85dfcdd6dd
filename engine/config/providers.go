package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Provider is a backend type: a service that speaks the OpenAI
// chat-completions API, with the base URL and key variable its own
// documentation gives. MassGen configs name these types, so a MassGen user's
// `type: gemini` reaches Gemini here as it does there.
type Provider struct {
	Type string
	// Name is the provider as people call it, for messages and docs.
	Name string
	// BaseURL is the documented OpenAI-compatible root; empty means the
	// config must give base_url (a self-hosted or per-customer endpoint),
	// except for openai, whose root is the client's default.
	BaseURL string
	// BaseURLEnv names a variable the worker reads for the endpoint when
	// the config gives none (MassGen reads AZURE_OPENAI_ENDPOINT so).
	BaseURLEnv string
	// KeyEnv is the variable read for the key when api_key_env is not set;
	// empty means no key is sent unless api_key_env names one.
	KeyEnv string
	// KeyRequired: the service refuses anonymous calls, so a missing key is
	// reported before any call instead of as a 401 mid-session.
	KeyRequired bool
	// Verbosity: text.verbosity is sent, because the endpoint takes OpenAI's
	// `verbosity` parameter or may (a generic or self-hosted server); the
	// other providers reject it, so it is reported and left out.
	Verbosity bool
	// IgnoresEffort: the endpoint accepts reasoning_effort and ignores it
	// (Anthropic's, whose models think through `thinking`); it is reported
	// and left out, so the config does not promise what will not happen.
	IgnoresEffort bool
}

// providers lists every backend type MassGen documents that Conclave can
// reach over an OpenAI-compatible chat API, in the order docs/config.md
// shows them. Defaults follow MassGen's own (massgen/cli.py) where MassGen
// sets one, so a MassGen user's environment works unchanged.
var providers = []Provider{
	{Type: BackendOpenAI, Name: "OpenAI", KeyEnv: DefaultAPIKeyEnv, KeyRequired: true, Verbosity: true},
	{Type: "azure_openai", Name: "Azure OpenAI", BaseURLEnv: "AZURE_OPENAI_ENDPOINT", KeyEnv: "AZURE_OPENAI_API_KEY", KeyRequired: true, Verbosity: true},
	{Type: "claude", Name: "Anthropic (OpenAI SDK compatibility)", BaseURL: "https://api.anthropic.com/v1/", KeyEnv: "ANTHROPIC_API_KEY", KeyRequired: true, IgnoresEffort: true},
	{Type: "gemini", Name: "Google Gemini (OpenAI compatibility)", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai/", KeyEnv: "GEMINI_API_KEY", KeyRequired: true},
	{Type: "grok", Name: "xAI Grok", BaseURL: "https://api.x.ai/v1", KeyEnv: "XAI_API_KEY", KeyRequired: true},
	{Type: "openrouter", Name: "OpenRouter", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY", KeyRequired: true, Verbosity: true},
	{Type: "groq", Name: "Groq", BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY", KeyRequired: true},
	{Type: "together", Name: "Together AI", BaseURL: "https://api.together.xyz/v1", KeyEnv: "TOGETHER_API_KEY", KeyRequired: true},
	{Type: "fireworks", Name: "Fireworks AI", BaseURL: "https://api.fireworks.ai/inference/v1", KeyEnv: "FIREWORKS_API_KEY", KeyRequired: true},
	{Type: "cerebras", Name: "Cerebras", BaseURL: "https://api.cerebras.ai/v1", KeyEnv: "CEREBRAS_API_KEY", KeyRequired: true},
	{Type: "nebius", Name: "Nebius AI Studio", BaseURL: "https://api.studio.nebius.ai/v1", KeyEnv: "NEBIUS_API_KEY", KeyRequired: true},
	{Type: "qwen", Name: "Alibaba Qwen (DashScope compatible mode)", BaseURL: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", KeyEnv: "QWEN_API_KEY", KeyRequired: true},
	{Type: "zai", Name: "Z.ai (GLM)", BaseURL: "https://api.z.ai/api/paas/v4", KeyEnv: "ZAI_API_KEY", KeyRequired: true},
	{Type: "kimi", Name: "Moonshot Kimi", BaseURL: "https://api.moonshot.cn/v1", KeyEnv: "MOONSHOT_API_KEY", KeyRequired: true},
	{Type: "moonshot", Name: "Moonshot Kimi", BaseURL: "https://api.moonshot.cn/v1", KeyEnv: "MOONSHOT_API_KEY", KeyRequired: true},
	{Type: "poe", Name: "Poe", BaseURL: "https://api.poe.com/v1", KeyEnv: "POE_API_KEY", KeyRequired: true},
	{Type: "chatcompletion", Name: "any OpenAI-compatible endpoint", Verbosity: true},
	{Type: "vllm", Name: "vLLM (local)", BaseURL: "http://localhost:8000/v1", KeyEnv: "VLLM_API_KEY", Verbosity: true},
	{Type: "sglang", Name: "SGLang (local)", BaseURL: "http://localhost:30000/v1", KeyEnv: "SGLANG_API_KEY", Verbosity: true},
	{Type: "lmstudio", Name: "LM Studio (local)", BaseURL: "http://localhost:1234/v1", KeyEnv: "LMSTUDIO_API_KEY", Verbosity: true},
	{Type: "inference", Name: "a vLLM or SGLang server", Verbosity: true},
}

// refusedTypes are MassGen backend types that are not chat APIs: they run a
// whole agent (its own tools, filesystem and loop) in MassGen's process.
// Each names why Conclave cannot run it and what to use instead.
var refusedTypes = map[string]string{
	"claude_code":     "runs the Claude Code agent SDK in MassGen's process with its own tools and files; Conclave calls models over HTTP and gives every agent its own workspace tools. Use type: claude with the same model (e.g. claude-sonnet-4-5)",
	"claude_code_cli": "drives the Claude Code CLI; use type: claude with the same model",
	"codex":           "drives the OpenAI Codex agent CLI; use type: openai with a Codex-capable model (e.g. gpt-5-codex)",
	"copilot":         "drives the GitHub Copilot agent; use the model's own API: type: openai, claude or gemini",
	"gemini_cli":      "drives the Gemini CLI; use type: gemini with the same model",
	"ag2":             "wraps AG2 (AutoGen) agents, which bring their own loop; use the model in its llm_config directly, e.g. type: openai",
	"autogen":         "wraps AG2 (AutoGen) agents, which bring their own loop; use the model in its llm_config directly, e.g. type: openai",
	"langgraph":       "wraps a LangGraph graph, which brings its own loop; use the graph's model directly, e.g. type: openai",
	"smolagents":      "wraps smolagents agents, which bring their own loop; use their model directly, e.g. type: openai",
	"external":        "wraps another framework's agents; use their model directly, e.g. type: openai",
}

// hostKeyEnvs is MassGen's rule for type chatcompletion: the key variable
// follows the host of base_url.
var hostKeyEnvs = []struct{ host, env string }{
	{"cerebras.ai", "CEREBRAS_API_KEY"},
	{"together.xyz", "TOGETHER_API_KEY"},
	{"together.ai", "TOGETHER_API_KEY"},
	{"fireworks.ai", "FIREWORKS_API_KEY"},
	{"groq.com", "GROQ_API_KEY"},
	{"nebius.ai", "NEBIUS_API_KEY"},
	{"nebius.com", "NEBIUS_API_KEY"},
	{"openrouter.ai", "OPENROUTER_API_KEY"},
	{"z.ai", "ZAI_API_KEY"},
	{"bigmodel.cn", "ZAI_API_KEY"},
	{"moonshot.ai", "MOONSHOT_API_KEY"},
	{"moonshot.cn", "MOONSHOT_API_KEY"},
	{"poe.com", "POE_API_KEY"},
	{"aliyuncs.com", "QWEN_API_KEY"},
	{"api.openai.com", "OPENAI_API_KEY"},
	{"openai.azure.com", "AZURE_OPENAI_API_KEY"},
	{"api.anthropic.com", "ANTHROPIC_API_KEY"},
	{"googleapis.com", "GEMINI_API_KEY"},
	{"api.x.ai", "XAI_API_KEY"},
}

// Providers returns the supported backend types, in documentation order.
func Providers() []Provider { return slices.Clone(providers) }

// LookupProvider returns the provider of a backend type.
func LookupProvider(typ string) (Provider, bool) {
	for _, p := range providers {
		if p.Type == typ {
			return p, true
		}
	}
	return Provider{}, false
}

// KeyRequired reports whether the backend's service refuses calls without
// a key. A generic endpoint (chatcompletion, local servers) may need none.
func (b Backend) KeyRequired() bool {
	p, ok := LookupProvider(b.Type)
	if !ok || b.APIKeyEnv == "" {
		return false
	}
	// Pointed elsewhere (a proxy, a local server, a test double), the
	// endpoint decides; a known service's host still needs its key.
	if b.BaseURL != "" && b.BaseURL != p.BaseURL {
		return keyEnvForHost(b.BaseURL) != ""
	}
	return p.KeyRequired
}

func keyEnvForHost(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	for _, h := range hostKeyEnvs {
		if host == h.host || strings.HasSuffix(host, "."+h.host) {
			return h.env
		}
	}
	return ""
}

// ResolveBaseURL is the endpoint the worker calls: base_url, else the
// provider's endpoint variable read through getenv, else "" (the client's
// default, OpenAI). It fails when the provider has no endpoint at all.
func (b Backend) ResolveBaseURL(getenv func(string) string) (string, error) {
	if b.BaseURL != "" {
		return b.BaseURL, nil
	}
	p, _ := LookupProvider(b.Type)
	if p.BaseURLEnv == "" {
		return "", nil
	}
	v := strings.TrimSpace(getenv(p.BaseURLEnv))
	if v == "" {
		return "", fmt.Errorf("%s needs an endpoint: set base_url in the config or %s where the worker runs, e.g. https://YOUR-RESOURCE.openai.azure.com/", p.Name, p.BaseURLEnv)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("%s is not an http(s) URL without credentials; set it to e.g. https://YOUR-RESOURCE.openai.azure.com/", p.BaseURLEnv)
	}
	if b.Type == "azure_openai" {
		v = normalizeAzure(v)
	}
	return v, nil
}

// normalizeAzure turns the resource endpoint MassGen's Azure backend takes
// (https://NAME.openai.azure.com/) into the root of Azure's OpenAI v1 API,
// which the OpenAI client can call without an api_version.
func normalizeAzure(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return baseURL
	}
	u.Path = "/openai/v1"
	return u.String()
}
