// Package pipelinetest holds what pipeline tests and the pipeline token
// benchmark share: a scenario directory in seed 004's shape, and a
// scripted model (an llmtest rule) that works through any step the way a
// diligent agent would — write a file, then complete_step with it as
// evidence, or report failure for the steps a test says fail.
package pipelinetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// StepIDs are the ids of an n-step scenario: s1, s2, …
func StepIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%d", i+1)
	}
	return ids
}

// WriteScenario writes an n-step scenario directory under dir: meta.yaml,
// steps/NN-sK.md with a prompt of about promptBytes, and prd.md.
func WriteScenario(dir string, n, promptBytes int) error {
	if err := os.MkdirAll(filepath.Join(dir, "steps"), 0o755); err != nil {
		return err
	}
	var meta strings.Builder
	meta.WriteString("title: Scripted scenario\nsteps:\n")
	for i, id := range StepIDs(n) {
		file := fmt.Sprintf("%02d-%s.md", i+1, id)
		fmt.Fprintf(&meta, "  - {id: %s, title: Step %d, file: %s}\n", id, i+1, file)
		prompt := fmt.Sprintf("Do step %d of the project and write %s.md with what you did.\n", i+1, id)
		for len(prompt) < promptBytes {
			prompt += fmt.Sprintf("- Requirement %d of step %s: keep the change small and checked.\n", len(prompt)%97, id)
		}
		if err := os.WriteFile(filepath.Join(dir, "steps", file), []byte(prompt), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.yaml"), []byte(meta.String()), 0o644); err != nil {
		return err
	}
	prd := "# Product\n\nA small service with a CLI. Every step leaves a file that proves its work.\n"
	return os.WriteFile(filepath.Join(dir, "prd.md"), []byte(prd), 0o644)
}

// Agent scripts the model of every step. Fail lists the steps that report
// failure; it may change while a server runs (a test "fixes the script").
type Agent struct {
	mu   sync.Mutex
	fail map[string]bool
	// FileBytes pads each step's file, to give later steps' reads weight.
	FileBytes int
}

// NewAgent returns an agent for which the named steps fail.
func NewAgent(failing ...string) *Agent {
	a := &Agent{fail: map[string]bool{}}
	a.SetFailing(failing...)
	return a
}

// SetFailing replaces the steps that fail.
func (a *Agent) SetFailing(steps ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = map[string]bool{}
	for _, s := range steps {
		a.fail[s] = true
	}
}

func (a *Agent) failing(step string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.fail[step]
}

// Rule is the llmtest rule that plays the agent. The current step is the
// one named by the latest "# Step: " user message, so the same rule plays
// isolated steps and one long conversation.
func (a *Agent) Rule() llmtest.Rule {
	return llmtest.Func(func(req llmtest.Request) llmtest.Reply {
		step, tools := current(req)
		if step == "" {
			return llmtest.Reply{Text: "summary: a small service with a CLI"}
		}
		if tools == 0 {
			content := step + " done\n" + strings.Repeat("x", a.FileBytes)
			args, _ := json.Marshal(map[string]string{"path": step + ".md", "content": content})
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w-" + step, Name: "write_file", Arguments: string(args)}}}
		}
		if a.failing(step) {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c-" + step, Name: "complete_step",
				Arguments: `{"status":"fail","evidencePaths":["` + step + `.md"],"error":"` + step + `: the check failed"}`}}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c-" + step, Name: "complete_step",
			Arguments: `{"status":"pass","evidencePaths":["` + step + `.md"]}`}}}
	}).Named("pipeline agent")
}

// current finds the step being worked on and how many tool results it has.
func current(req llmtest.Request) (step string, tools int) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == "tool" {
			tools++
			continue
		}
		if m.Role == "user" && strings.HasPrefix(m.Content, "# Step: ") {
			name := strings.TrimPrefix(m.Content, "# Step: ")
			if j := strings.IndexAny(name, " \n"); j >= 0 {
				name = name[:j]
			}
			return name, tools
		}
	}
	return "", 0
}

// StepOf is the step a request works on, for assertions on recorded calls.
func StepOf(req llmtest.Request) string {
	s, _ := current(req)
	return s
}
