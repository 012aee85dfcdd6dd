package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/pipelinetest"
)

// The token comparison of seed 004: the same five steps run each in its
// own isolated context, and run as one long conversation in which every
// step's prompt is appended after the previous step's work. The scripted
// agent does the same work either way (write a file, complete the step);
// prompt tokens are what the server counts over the wire.

type tokenRun struct {
	prompt, completion int64
	calls              int
}

func scenario(t testing.TB, promptBytes, fileBytes int) (*pipeline.Definition, *llmtest.Server, llm.Model) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, pipelinetest.WriteScenario(dir, 5, promptBytes))
	agent := pipelinetest.NewAgent()
	agent.FileBytes = fileBytes
	srv := llmtest.Start(t, agent.Rule())
	m, err := llm.New(llm.Config{Model: "m", BaseURL: srv.URL()}, "test-key")
	require.NoError(t, err)
	def, err := pipeline.LoadScenario(dir, nil)
	require.NoError(t, err)
	return def, srv, m
}

// runIsolated runs the steps as a pipeline run does: each with the
// project summary rendered for it and the previous step's id and pass/fail.
func runIsolated(t testing.TB, def *pipeline.Definition, m llm.Model) tokenRun {
	var r tokenRun
	var prev *pipeline.Previous
	summary := pipeline.SummarizeProject(def.Context)
	for _, s := range def.Graph.Steps {
		out, _, err := Run(context.Background(), Input{Graph: def.Graph, Step: s.Name, Title: def.Title, Task: "Build the service",
			Context: summary.For(s), Previous: prev, Workspace: t.TempDir(), Model: m})
		require.NoError(t, err)
		require.Equal(t, pipeline.Completed, out.Status, s.Name)
		r.prompt += out.Usage.InputTokens
		r.completion += out.Usage.OutputTokens
		r.calls += out.Turns
		prev = &pipeline.Previous{Name: s.Name, Status: string(out.Status)}
	}
	return r
}

func runConversation(t testing.TB, def *pipeline.Definition, m llm.Model) tokenRun {
	var r tokenRun
	var msgs []llm.Message
	ws := t.TempDir()
	summary := pipeline.SummarizeProject(def.Context)
	for i, s := range def.Graph.Steps {
		if i == 0 {
			msgs = FirstMessages(Input{Title: def.Title, Task: "Build the service", Context: summary.For(s)}, s)
		} else {
			prev := &pipeline.Previous{Name: def.Graph.Steps[i-1].Name, Status: string(pipeline.Completed)}
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: pipeline.StepMessage(s, "", prev, "")})
		}
		out, tr, err := Run(context.Background(), Input{Graph: def.Graph, Step: s.Name, Title: def.Title,
			Workspace: ws, Model: m, Resume: msgs})
		require.NoError(t, err)
		require.Equal(t, pipeline.Completed, out.Status, s.Name)
		r.prompt += out.Usage.InputTokens
		r.completion += out.Usage.OutputTokens
		r.calls += out.Turns
		msgs = tr.Messages
	}
	return r
}

func TestIsolatedStepsUseFewerPromptTokens(t *testing.T) {
	def, _, m := scenario(t, 1500, 2000)
	iso, conv := runIsolated(t, def, m), runConversation(t, def, m)
	require.Equal(t, iso.calls, conv.calls, "the same work either way")
	require.Equal(t, 10, iso.calls)
	require.Less(t, iso.prompt, conv.prompt)
	t.Logf("prompt tokens: isolated %d, one conversation %d, ratio %.2f", iso.prompt, conv.prompt, float64(iso.prompt)/float64(conv.prompt))
}

// BenchmarkPipelineTokens reports prompt tokens of a five-step scenario run
// step by step against the same steps as one conversation:
//
//	go test -run '^$' -bench PipelineTokens ./engine/pipeline/runner/
func BenchmarkPipelineTokens(b *testing.B) {
	for _, size := range []struct {
		name               string
		prompt, fileOutput int
	}{{"small", 500, 500}, {"medium", 1500, 2000}, {"large", 4000, 8000}} {
		b.Run(size.name, func(b *testing.B) {
			def, _, m := scenario(b, size.prompt, size.fileOutput)
			var iso, conv tokenRun
			for b.Loop() {
				iso, conv = runIsolated(b, def, m), runConversation(b, def, m)
			}
			b.ReportMetric(float64(iso.prompt), "isolated_prompt_tokens")
			b.ReportMetric(float64(conv.prompt), "conversation_prompt_tokens")
			b.ReportMetric(float64(iso.prompt)/float64(conv.prompt), "token_ratio")
		})
	}
}
