package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/mcp"
)

// resolvedBackend is one agent's backend as the worker will reach it. It
// names the key variable and whether this shell has it, never the key.
type resolvedBackend struct {
	Agent       string `json:"agent"`
	Type        string `json:"type"`
	Provider    string `json:"provider"`
	Model       string `json:"model"`
	BaseURL     string `json:"base_url"`
	APIKeyEnv   string `json:"api_key_env,omitempty"`
	KeyRequired bool   `json:"key_required"`
	// KeySetHere says whether api_key_env is set where validate runs; the
	// worker's environment is what counts.
	KeySetHere bool `json:"key_set_here"`
}

// validation is the --json report of `conclave validate`.
type validation struct {
	Valid    bool              `json:"valid"`
	Errors   []string          `json:"errors"`
	Warnings []config.Warning  `json:"warnings"`
	Backends []resolvedBackend `json:"backends,omitempty"`
	// Tools says, per agent, which MCP servers and commands it asks for
	// and what a worker needs to run them.
	Tools  []string       `json:"tools,omitempty"`
	Config *config.Config `json:"config,omitempty"`
}

func newValidateCmd() *cobra.Command {
	var path string
	var asJSON, strict bool
	cmd := &cobra.Command{
		Use:   "validate --config FILE [--json] [--strict]",
		Short: "Check a config (Conclave's or MassGen's) and show how it resolves, without starting anything",
		Long: `validate parses the config the way run does and prints the resolved agents
(backend type, model, endpoint, the name of the key variable), the coordination
settings, and every warning and note. It exits 0 when the config would run and 1
with every error at once when it would not. --strict also refuses warnings:
MassGen settings that Conclave accepts but does not act on.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := validateConfig(path, strict, os.Getenv)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(v); err != nil {
					return err
				}
			} else {
				printValidation(out, path, v)
			}
			if !v.Valid {
				return &exitError{code: 1, err: fmt.Errorf("%s: %d error(s)", path, len(v.Errors))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "YAML config to check (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func validateConfig(path string, strict bool, getenv func(string) string) validation {
	cfg, warnings, err := config.LoadWithWarnings(path)
	v := validation{Warnings: warnings, Errors: splitErrors(err)}
	if v.Warnings == nil {
		v.Warnings = []config.Warning{}
	}
	if strict {
		for _, w := range warnings {
			if !w.Note {
				v.Errors = append(v.Errors, w.String()+" (--strict)")
			}
		}
	}
	if cfg != nil {
		v.Config = cfg
		for _, a := range cfg.Agents {
			b := a.Backend
			p, _ := config.LookupProvider(b.Type)
			r := resolvedBackend{Agent: a.ID, Type: b.Type, Provider: p.Name, Model: b.Model,
				APIKeyEnv: b.APIKeyEnv, KeyRequired: b.KeyRequired() || b.BaseURL == ""}
			switch base, err := b.ResolveBaseURL(getenv); {
			case err != nil:
				r.BaseURL = fmt.Sprintf("$%s (read by the worker; not set here)", p.BaseURLEnv)
			case base == "":
				r.BaseURL = llm.DefaultBaseURL
			default:
				r.BaseURL = base
			}
			if b.APIKeyEnv != "" {
				r.KeySetHere = strings.TrimSpace(getenv(b.APIKeyEnv)) != ""
			}
			v.Backends = append(v.Backends, r)
		}
		v.Tools, v.Warnings = toolReport(path, cfg, v.Warnings, mcp.FindSandbox(false, false))
	}
	if v.Errors == nil {
		v.Errors = []string{}
	}
	v.Valid = len(v.Errors) == 0
	return v
}

func splitErrors(err error) []string {
	if err == nil {
		return nil
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var out []string
		for _, e := range joined.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// resolvedYAML is the config as Conclave runs it, defaults filled in and
// MassGen's keys folded into Conclave's: a file that loads to the same
// config without warnings.
func resolvedYAML(cfg *config.Config) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(cfg); err != nil {
		return nil, err
	}
	// No prices and `prices: {}` are the same setting, but only the first
	// reads back as it was.
	if len(cfg.Prices) == 0 && doc.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == "prices" {
				doc.Content = append(doc.Content[:i], doc.Content[i+2:]...)
				break
			}
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// printValidation prints the summary for a person. validate is how one
// reads an untrusted config, so everything printed is neutralised
// (terminalText) whatever the output: a model name's ESC, BEL or OSC 52
// sequence cannot drive the terminal, and a newline cannot forge a line.
func printValidation(w io.Writer, path string, v validation) {
	var out bytes.Buffer
	defer func() { _, _ = io.WriteString(w, terminalText(out.String())) }()
	v.Backends = slices.Clone(v.Backends)
	for i := range v.Backends {
		b := &v.Backends[i]
		b.Agent, b.Type, b.Model, b.BaseURL = terminalLine(b.Agent), terminalLine(b.Type), terminalLine(b.Model), terminalLine(b.BaseURL)
	}
	printValidationTo(&out, path, v)
}

func printValidationTo(out io.Writer, path string, v validation) {
	if v.Config != nil {
		if data, err := resolvedYAML(v.Config); err == nil {
			fmt.Fprintf(out, "# %s as Conclave runs it (defaults filled in, MassGen's keys folded in)\n%s\n", path, data)
		}
	}
	if len(v.Backends) > 0 {
		o := v.Config.Orchestrator
		fmt.Fprintf(out, "%s: %d agent(s), coordination_mode %s, consensus %s, update_mode %s, final_answer_strategy %s, timeout %ds\n",
			path, len(v.Backends), o.CoordinationMode, o.Consensus, o.UpdateMode, o.FinalAnswerStrategy, o.OrchestratorTimeoutSeconds)
		for _, b := range v.Backends {
			key := "no key"
			if b.APIKeyEnv != "" {
				state := "not set here"
				if b.KeySetHere {
					state = "set here"
				}
				need := "optional"
				if b.KeyRequired {
					need = "required"
				}
				if !slices.Contains(config.DefaultKeyEnvs(), b.APIKeyEnv) {
					state += "; not a provider's variable: workers need --allow-key-env " + b.APIKeyEnv
				}
				key = fmt.Sprintf("key $%s (%s, %s)", b.APIKeyEnv, need, state)
			}
			fmt.Fprintf(out, "  %-16s %-14s %-28s %s · %s\n", b.Agent, b.Type, b.Model, b.BaseURL, key)
		}
	}
	for _, t := range v.Tools {
		fmt.Fprintln(out, "  "+t)
	}
	for _, w := range v.Warnings {
		fmt.Fprintln(out, w.String())
	}
	for _, e := range v.Errors {
		fmt.Fprintln(out, "error:", e)
	}
	if v.Valid {
		fmt.Fprintf(out, "%s: OK (%d warning(s))\n", path, countWarnings(v.Warnings))
	}
}

func countWarnings(ws []config.Warning) int {
	n := 0
	for _, w := range ws {
		if !w.Note {
			n++
		}
	}
	return n
}
