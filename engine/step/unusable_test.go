package step

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/pipeline"
	"github.com/conclave-ai/conclave/engine/pipeline/runner"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// damage is one way a stored checkpoint goes bad: by accident (the first
// five) or by hand (the rest, which parse but break the step's rules).
type damage struct {
	name   string
	change func(valid string) string
	reason string // what the warning must say
}

// replaceOnce makes a hand edit, failing loudly when the text is not there.
func replaceOnce(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic(fmt.Sprintf("%q is not in the checkpoint", old))
		}
		return strings.Replace(s, old, new, 1)
	}
}

var accidents = []damage{
	{"garbage", func(string) string { return "xx{not a trace" }, "it is damaged: trace line 1"},
	{"empty file", func(string) string { return "" }, "it is damaged: trace has no state line"},
	{"truncated last line", func(s string) string { return s[:len(s)-12] }, "it is damaged: trace line"},
	{"binary appended", func(s string) string { return s + "\x00\xff\xfe\x01binary" }, "it is damaged: trace line"},
	{"state of the wrong type", func(string) string { return `{"kind":"state","state":{"turns":"x"}}` + "\n" }, "it is damaged: trace line 1"},
}

// unusable checks what every unusable checkpoint must lead to: the model
// was asked again, one warning names the reason, and the checkpoint is
// kept byte for byte next to the fresh one.
func unusable(t *testing.T, st storage.Store, key, bad string, srv *llmtest.Server, logged []string, reason string) {
	t.Helper()
	require.Equal(t, 1, srv.Count(), "the step starts fresh and asks the model")
	require.Len(t, logged, 1, "one warning")
	require.Contains(t, logged[0], reason)
	require.Contains(t, logged[0], "starting the step fresh")
	kept := agent.UnusableKey(key, []byte(bad))
	require.Contains(t, logged[0], "kept as "+kept)
	data, err := st.Get(context.Background(), kept)
	require.NoError(t, err, "the unusable checkpoint is kept for inspection")
	require.Equal(t, bad, string(data))
	data, err = st.Get(context.Background(), key)
	require.NoError(t, err)
	require.NotEqual(t, bad, string(data), "the fresh attempt checkpoints in its place")
}

// Step mode: a checkpoint that cannot be resumed — damaged or hand-edited —
// is never trusted and never silently dropped.
func TestStepModeStartsFreshFromAnUnusableCheckpoint(t *testing.T) {
	cases := append(append([]damage(nil), accidents...),
		damage{"vote for an unknown agent", replaceOnce(`"target":"agent_b","target_label":"agent2"`, `"target":"ghost","target_label":"ghost"`), `it cannot be trusted: its recorded vote is invalid (unknown_vote_target`},
		damage{"vote target relabelled", replaceOnce(`"target":"agent_b"`, `"target":"ghost"`), `its recorded vote is for "ghost", but "agent2" names "agent_b"`},
		damage{"vote without a reason", replaceOnce(`"reason":"B1 is best"`, `"reason":""`), "its recorded vote is invalid (invalid_arguments"},
		damage{"unknown action", replaceOnce(`"action":"vote"`, `"action":"explode"`), `its recorded action "explode" is not one of`},
		damage{"empty new answer", replaceOnce(`"action":"vote"`, `"action":"new_answer","answer":" "`), "its recorded new_answer is invalid (invalid_arguments"},
		damage{"answer of a stranger", replaceOnce(`"known":[`, `"known":[{"agent":"ghost","label":"agent9.1","step":1},`), `an answer of "ghost"`},
		damage{"unbound", replaceOnce(`"binding":"`, `"binding":"x`), "it belongs to an attempt with other inputs"},
		damage{"older format", func(s string) string {
			i := strings.Index(s, `"binding":"`)
			j := strings.Index(s[i+11:], `"`)
			return s[:i] + `"binding":""` + s[i+11+j+1:]
		}, "it was written by an older version"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			base := store(t)
			twoAnswers(t, base)
			// The first attempt decides, checkpoints, and dies before
			// storing its vote: its checkpoint is finished and valid.
			first := llmtest.Start(t, llmtest.Call("vote", `{"agent_id":"agent2","reason":"B1 is best"}`))
			_, err := Run(ctx, Options{Store: &failOnce{Store: base, suffix: "vote.json"}, Config: team(t), Agent: "agent_a", Task: "t", Model: model(t, first), Now: now})
			require.ErrorContains(t, err, "storage unavailable")
			key := session.TraceKey("agent_a", 2)
			valid, err := base.Get(ctx, key)
			require.NoError(t, err)
			bad := c.change(string(valid))
			require.NoError(t, base.Put(ctx, key, []byte(bad)))

			srv := llmtest.Start(t, llmtest.Call("vote", `{"agent_id":"agent2","reason":"B1 again"}`))
			var logged []string
			res, err := Run(ctx, Options{Store: base, Config: team(t), Agent: "agent_a", Task: "t", Model: model(t, srv), Now: now,
				Logf: func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) }})
			require.NoError(t, err)
			require.Equal(t, 2, res.Step)
			require.Equal(t, "agent_b", res.Outcome.Target)
			require.Equal(t, "B1 again", res.Outcome.Reason, "the action is the new call's")
			unusable(t, base, key, bad, srv, logged, c.reason)
		})
	}
}

// A pipeline step follows the same rule: it neither fails on a damaged
// checkpoint nor trusts a hand-edited outcome.
func TestPipelineStepStartsFreshFromAnUnusableCheckpoint(t *testing.T) {
	g := pipeline.Graph{Start: "build", Steps: []pipeline.Step{
		{Name: "build", Prompt: "Build.", Tools: []string{"write_file"}, Destinations: []string{"test"}},
		{Name: "test", Prompt: "Test."},
	}}
	const status = `"status":"completed"`
	cases := append(append([]damage(nil), accidents...),
		damage{"unknown status", replaceOnce(status, `"status":"exploded"`), `its outcome has status "exploded"`},
		damage{"evidence outside the workspace", replaceOnce(status, status+`,"evidencePaths":["../../etc/passwd"]`), `its evidence "../../etc/passwd" is not a path inside the workspace`},
		damage{"evidence under its former name", replaceOnce(status, status+`,"evidence":["../../etc/passwd"]`), `its evidence "../../etc/passwd" is not a path inside the workspace`},
		damage{"absolute evidence", replaceOnce(status, status+`,"evidence":["/etc/passwd"]`), `its evidence "/etc/passwd"`},
		damage{"jump to a step it may not reach", replaceOnce(status, status+`,"request":{"kind":"jump","target":"deploy"}`), `to "deploy", which is not a destination of step "build"`},
		damage{"call without a request", replaceOnce(status, `"status":"call_pending"`), "its outcome call_pending names no call"},
		damage{"unknown request kind", replaceOnce(status, status+`,"request":{"kind":"teleport","target":"test"}`), "its outcome completed carries a teleport"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := store(t)
			o := func(srv *llmtest.Server, logged *[]string) PipelineOptions {
				return PipelineOptions{Store: st, Seq: 1, Step: runner.Input{Graph: g, Step: "build", Task: "x", Model: model(t, srv), ModelName: "m"},
					Logf: func(f string, args ...any) { *logged = append(*logged, fmt.Sprintf(f, args...)) }}
			}
			var none []string
			first := llmtest.Start(t, llmtest.Text("built"))
			_, err := RunPipeline(ctx, o(first, &none))
			require.NoError(t, err)
			require.Empty(t, none)
			key := session.StepTraceKey(pipeline.StepFolder(1, "build"))
			valid, err := st.Get(ctx, key)
			require.NoError(t, err)
			bad := c.change(string(valid))
			require.NoError(t, st.Put(ctx, key, []byte(bad)))

			srv := llmtest.Start(t, llmtest.Text("built again"))
			var logged []string
			res, err := RunPipeline(ctx, o(srv, &logged))
			require.NoError(t, err, "a damaged checkpoint does not stop the step")
			require.Equal(t, pipeline.Completed, res.Outcome.Status)
			require.Equal(t, "built again", res.Outcome.Summary)
			require.Nil(t, res.Outcome.Request)
			unusable(t, st, key, bad, srv, logged, c.reason)
		})
	}
}

// The presentation, too: a damaged final/trace.jsonl is kept and reported.
func TestPresentationStartsFreshFromADamagedCheckpoint(t *testing.T) {
	ctx := context.Background()
	st := store(t)
	twoAnswers(t, st)
	const bad = "\x00garbage"
	require.NoError(t, st.Put(ctx, session.FinalTraceKey, []byte(bad)))
	srv := llmtest.Start(t, llmtest.Call("new_answer", `{"content":"the final B1"}`))
	var logged []string
	final, _, err := Present(ctx, PresentOptions{Store: st, Config: team(t), Presenter: "agent_b", Task: "t", Strategy: "winner_present",
		Model: model(t, srv), Tag: "present", Now: now, Logf: func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) }})
	require.NoError(t, err)
	require.Equal(t, "the final B1", final.Answer)
	unusable(t, st, session.FinalTraceKey, bad, srv, logged, "it is damaged: trace line 1")
	require.Contains(t, logged[0], "presentation by agent_b")
}

// A retry of the same launch borrows its first attempt's view only to
// resume that attempt: when the checkpoint is not resumed, the fresh start
// is shown the session as it is.
func TestFreshStartIsShownTheSessionAsItIs(t *testing.T) {
	ctx := context.Background()
	st := store(t)
	twoAnswers(t, st)
	srv := llmtest.Start(t,
		llmtest.Text("thinking about B1").Once(),
		llmtest.Fail(503, "busy").Once(),
		llmtest.Call("vote", `{"agent_id":"agent2","reason":"B2"}`),
	)
	var logged []string
	o := Options{Store: st, Config: team(t), Agent: "agent_a", Task: "t", Step: 2, Model: model(t, srv), Tag: "3", Now: now,
		Logf: func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) }}
	_, err := Run(ctx, o)
	require.Error(t, err)
	_, err = session.Save(ctx, st, session.StepOutput{Agent: "agent_b", Action: "new_answer", Answer: "B2", Now: now()})
	require.NoError(t, err)
	key := session.TraceKey("agent_a", 2)
	valid, err := st.Get(ctx, key)
	require.NoError(t, err)
	require.NoError(t, st.Put(ctx, key, []byte(replaceOnce(`"binding":"`, `"binding":"0`)(string(valid)))))

	res, err := Run(ctx, o)
	require.NoError(t, err)
	require.Equal(t, 3, srv.Count())
	fresh := srv.Requests()[2]
	require.Len(t, fresh.Messages, 2, "a fresh start")
	require.True(t, fresh.Contains("<agent2.2> B2"), "shown the answer stored meanwhile")
	require.Equal(t, 2, res.Outcome.SeenSteps["agent_b"])
	require.Len(t, logged, 1)
	require.Contains(t, logged[0], "it belongs to an attempt with other inputs")
}
