//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

// presentReply is the presenter's final answer, naming the parts it saw.
func presentReply(r llmtest.Request, ids ...string) llmtest.Reply {
	return call("new_answer", map[string]string{"content": "FINAL by " + agentOf(r.Model) + " assembling " + strings.Join(partsIn(r, ids...), ",")})
}

// TestDecomposition runs decomposition sessions of two or three agents that
// answer and stop in every order, stop without answering, keep answering
// into the limits, overrun their rounds or are restarted.
func TestDecomposition(t *testing.T) {
	e := startDecompEnv(t)
	abc := []string{"agent_a", "agent_b", "agent_c"}

	// Happy path: three agents answer their part, then stop; presenter agent_b.
	t.Run("answer then stop, presenter configured", func(t *testing.T) {
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, abc...)
			case r.Contains("PART-" + a):
				return stopCall("my part "+a+" is done", "complete")
			}
			return call("new_answer", map[string]string{"content": part(a)})
		}
		p := e.run(t, "d-happy", decompYAML("BASEURL", "coordination_mode: decomposition\npresenter: agent_b", subtasks(abc...)), fn, nil)
		p.agree(t)
		assert.Equal(t, coord.StatusConsensus, p.res.Status)
		assert.Equal(t, "agent_b", p.res.Winner)
		pres := p.presentations()
		require.Len(t, pres, 1, "one presentation")
		assert.Equal(t, "m-agent_b", pres[0].Model)
		assert.ElementsMatch(t, abc, partsIn(pres[0], abc...), "the presentation shows every part")
		assert.Contains(t, p.res.FinalAnswer, "assembling agent_a,agent_b,agent_c") // our script echoes the parts it was shown
		for _, a := range abc {
			starts := p.stepStarts(a)
			require.NotEmpty(t, starts, a)
			assert.True(t, starts[0].Contains("SUBTASK-"+a), "%s's step shows its subtask", a)
			for _, o := range abc {
				if o != a {
					assert.False(t, starts[0].Contains("SUBTASK-"+o), "%s's step shows %s's subtask", a, o)
				}
			}
			assert.True(t, starts[0].HasTool("stop") && !starts[0].HasTool("vote"), "%s offered stop, not vote", a)
			assert.LessOrEqual(t, p.calls(a), 6, "%s model calls bounded", a)
		}
	})

	// agent_c stops at once without answering (before peers answered); no
	// presenter configured: the first agent presents.
	t.Run("stop without answer before peers, no presenter", func(t *testing.T) {
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, abc...)
			case a == "agent_c":
				return stopCall("nothing for me to add", "complete")
			case r.Contains("PART-" + a):
				return stopCall("done "+a, "complete")
			}
			rep := call("new_answer", map[string]string{"content": part(a)})
			rep.Delay = time.Second
			return rep
		}
		p := e.run(t, "d-stopfirst", decompYAML("BASEURL", "coordination_mode: decomposition", subtasks(abc...)), fn, nil)
		p.agree(t)
		assert.Equal(t, coord.StatusConsensus, p.res.Status)
		assert.Equal(t, "agent_a", p.res.Winner, "first agent presents")
		pres := p.presentations()
		require.Len(t, pres, 1)
		assert.ElementsMatch(t, []string{"agent_a", "agent_b"}, partsIn(pres[0], abc...))
		// agent_c's stop before the peers answered is stale: its next step
		// (still without an answer) is shown the peers' work (CHANGES 1).
		cs := p.stepStarts("agent_c")
		require.GreaterOrEqual(t, len(cs), 2, "agent_c relaunched after its stale stop")
		last := cs[len(cs)-1]
		assert.ElementsMatch(t, []string{"agent_a", "agent_b"}, partsIn(last, abc...), "agent_c's later step shows peers' work")
		assert.False(t, last.Contains("(no answers available yet)"))
		assert.LessOrEqual(t, len(p.reqs), 20, "model calls bounded")
	})

	// Presenter agent_c never answers; it stops after peers answer.
	t.Run("presenter without an answer", func(t *testing.T) {
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, abc...)
			case a == "agent_c" && len(partsIn(r, abc...)) == 2:
				return stopCall("the others covered it", "complete")
			case a == "agent_c":
				rep := call("list_files", map[string]string{})
				rep.ToolCalls[0].ID = fmt.Sprintf("l%d", len(r.Messages))
				rep.Delay = 300 * time.Millisecond
				if len(r.Messages) > 12 {
					return stopCall("nothing seen, stopping", "complete")
				}
				return rep
			case r.Contains("PART-" + a):
				return stopCall("done "+a, "complete")
			}
			return call("new_answer", map[string]string{"content": part(a)})
		}
		p := e.run(t, "d-presnoans", decompYAML("BASEURL", "coordination_mode: decomposition\npresenter: agent_c", subtasks(abc...)), fn, nil)
		p.agree(t)
		assert.Equal(t, "agent_c", p.res.Winner)
		pres := p.presentations()
		require.Len(t, pres, 1)
		assert.Equal(t, "m-agent_c", pres[0].Model)
		assert.ElementsMatch(t, []string{"agent_a", "agent_b"}, partsIn(pres[0], abc...))
		assert.LessOrEqual(t, len(p.reqs), 40)
	})

	// Every agent stops without answering: NoAnswers before any presentation,
	// no invented answer.
	t.Run("all stop without answering", func(t *testing.T) {
		fn := func(r llmtest.Request) llmtest.Reply {
			if presenting(r) {
				return call("new_answer", map[string]string{"content": "INVENTED"})
			}
			return stopCall("nothing to do", "complete")
		}
		p := e.run(t, "d-allstop", decompYAML("BASEURL", "coordination_mode: decomposition", subtasks(abc...)), fn, nil)
		require.Error(t, p.err, "session fails")
		assert.Contains(t, p.err.Error(), "NoAnswers")
		assert.Empty(t, p.presentations(), "no presentation model call")
		assert.LessOrEqual(t, len(p.reqs), 3, "each agent stops once; nothing is stale")
		assert.True(t, p.hasStat)
		assert.Equal(t, "failed", p.status.Phase, "status.json phase")
		assert.Equal(t, "failed", p.cli.Phase, "session status phase: %s", p.cliOut)
		assert.Empty(t, p.cli.Relaunch)
		for _, k := range p.keys {
			assert.False(t, strings.HasPrefix(k, "final/"), "final file written: %s", k)
		}
		t.Logf("error: %v", p.err)
	})

	// Every agent stops with status blocked, without answering.
	t.Run("all blocked", func(t *testing.T) {
		fn := func(r llmtest.Request) llmtest.Reply {
			if presenting(r) {
				return call("new_answer", map[string]string{"content": "INVENTED"})
			}
			return stopCall("blocked: need credentials", "blocked")
		}
		p := e.run(t, "d-allblocked", decompYAML("BASEURL", "coordination_mode: decomposition", subtasks("agent_a", "agent_b")), fn, nil)
		require.Error(t, p.err)
		assert.Contains(t, p.err.Error(), "NoAnswers")
		assert.Empty(t, p.presentations())
		assert.Equal(t, "failed", p.status.Phase)
		assert.Equal(t, "failed", p.cli.Phase, p.cliOut)
	})

	// agent_b answers, then stops blocked; others complete.
	t.Run("answer then blocked", func(t *testing.T) {
		ids := []string{"agent_a", "agent_b"}
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, ids...)
			case r.Contains("PART-"+a) && a == "agent_b":
				return stopCall("blocked on the API", "blocked")
			case r.Contains("PART-" + a):
				return stopCall("done", "complete")
			}
			return call("new_answer", map[string]string{"content": part(a)})
		}
		p := e.run(t, "d-blocked", decompYAML("BASEURL", "coordination_mode: decomposition", subtasks(ids...)), fn, nil)
		p.agree(t)
		var sf session.StopFile
		last := p.folders["agent_b"][len(p.folders["agent_b"])-1]
		require.NoError(t, session.ReadJSON(context.Background(), subStore(e.st, p.id), "agents/agent_b/"+last+"/stop.json", &sf))
		assert.Equal(t, "blocked", sf.Status)
		assert.LessOrEqual(t, len(p.reqs), 12)
	})

	// Every agent keeps answering: the global cap auto-stops them.
	t.Run("keep answering, global cap", func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		fn := func(r llmtest.Request) llmtest.Reply {
			if presenting(r) {
				return presentReply(r, abc...)
			}
			mu.Lock()
			n++
			k := n
			mu.Unlock()
			return call("new_answer", map[string]string{"content": fmt.Sprintf("%s revision %d", part(agentOf(r.Model)), k)})
		}
		p := e.run(t, "d-keepglobal", decompYAML("BASEURL", "coordination_mode: decomposition\nmax_new_answers_global: 4\nmax_new_answers_per_agent: null", subtasks(abc...)), fn, nil)
		p.agree(t)
		total := 0
		for _, a := range p.snap.Agents {
			total += len(a.Answers)
		}
		assert.LessOrEqual(t, total, 4, "global cap holds")
		stops := 0
		for _, k := range p.keys {
			if strings.HasSuffix(k, "/stop.json") {
				var sf session.StopFile
				require.NoError(t, session.ReadJSON(context.Background(), subStore(e.st, p.id), k, &sf))
				t.Logf("%s: %+v", k, sf)
				assert.Equal(t, "complete", sf.Status)
				assert.Contains(t, sf.Summary, "max_new_answers_global (4) reached")
				stops++
			}
		}
		// Steps already running when the cap is reached are refused at
		// submission (documented); a model that keeps answering is then
		// dropped after max_enforcement_attempts, so not every agent
		// ends with an auto-stop.
		t.Logf("auto-stops %d, failed %v", stops, p.res.FailedAgents)
		assert.LessOrEqual(t, len(p.reqs), 4+3+1+3, "auto-stops need no model call")
	})

	// agent_a keeps answering while agent_b answered once and stopped: the
	// streak limit (per agent, 2) auto-stops agent_a.
	t.Run("keep answering, streak cap", func(t *testing.T) {
		ids := []string{"agent_a", "agent_b"}
		var mu sync.Mutex
		n := 0
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, ids...)
			case a == "agent_b" && r.Contains("PART-agent_b"):
				return stopCall("done", "complete")
			case a == "agent_b":
				return call("new_answer", map[string]string{"content": part(a)})
			}
			mu.Lock()
			n++
			k := n
			mu.Unlock()
			return call("new_answer", map[string]string{"content": fmt.Sprintf("%s revision %d", part(a), k)})
		}
		p := e.run(t, "d-keepstreak", decompYAML("BASEURL", "coordination_mode: decomposition\nmax_new_answers_global: null\nmax_new_answers_per_agent: 2", subtasks(ids...)), fn, nil)
		p.agree(t)
		a, _ := p.snap.Agent("agent_a")
		// Two streaks of at most 2, split by the one piece of news from
		// agent_b (whose single answer may land before or after a's second).
		assert.LessOrEqual(t, len(a.Answers), 4, "streak limit auto-stops agent_a (at most one reset by agent_b's news)")
		found := false
		for _, k := range p.keys {
			if strings.HasPrefix(k, "agents/agent_a/") && strings.HasSuffix(k, "/stop.json") {
				var sf session.StopFile
				require.NoError(t, session.ReadJSON(context.Background(), subStore(e.st, p.id), k, &sf))
				t.Logf("%s: %+v", k, sf)
				if strings.Contains(sf.Summary, "max_new_answers_per_agent (2) reached") {
					found = true
				}
			}
		}
		assert.True(t, found, "agent_a auto-stopped naming the streak limit")
		assert.LessOrEqual(t, len(p.reqs), 10)
	})

	// agent_b overruns every step (keeps writing files); round timeouts end
	// its turns and after 3 in a row it is dropped. agent_b is the presenter.
	t.Run("round timeouts drop a stubborn agent", func(t *testing.T) {
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, abc...)
			case a == "agent_b":
				rep := call("write_file", map[string]string{"path": fmt.Sprintf("f%03d.md", len(r.Messages)), "content": "more"})
				rep.ToolCalls[0].ID = fmt.Sprintf("w%03d", len(r.Messages))
				rep.Delay = 300 * time.Millisecond
				return rep
			case r.Contains("PART-" + a):
				return stopCall("done", "complete")
			}
			return call("new_answer", map[string]string{"content": part(a)})
		}
		p := e.run(t, "d-timeout", decompYAML("BASEURL", "coordination_mode: decomposition\npresenter: agent_b\ninitial_round_timeout_seconds: 2\nsubsequent_round_timeout_seconds: 2\nround_timeout_grace_seconds: 1", subtasks(abc...)), fn, nil)
		p.agree(t)
		assert.Contains(t, p.res.FailedAgents, "agent_b")
		t.Logf("failed: %v", p.res.FailedAgents)
		assert.Len(t, p.folders["agent_b"], 3, "three turns, then dropped")
		assert.NotEqual(t, "agent_b", p.res.Winner, "a dropped presenter is replaced")
		pres := p.presentations()
		require.Len(t, pres, 1)
		assert.ElementsMatch(t, []string{"agent_a", "agent_c"}, partsIn(pres[0], abc...))
		assert.Equal(t, "failed", string(p.cli.Agents["agent_b"].State), p.cliOut)
	})

	// update_mode restart: agent_a answers fast and its stop step is slow; the
	// peers' answers restart it.
	t.Run("update_mode restart", func(t *testing.T) {
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, abc...)
			case a == "agent_a" && r.Contains("PART-agent_a") && len(partsIn(r, abc...)) < 3:
				rep := call("list_files", map[string]string{})
				rep.ToolCalls[0].ID = fmt.Sprintf("l%d", len(r.Messages))
				rep.Delay = 400 * time.Millisecond
				return rep
			case r.Contains("PART-" + a):
				return stopCall("done", "complete")
			case a != "agent_a":
				rep := call("new_answer", map[string]string{"content": part(a)})
				rep.Delay = 1500 * time.Millisecond
				return rep
			}
			return call("new_answer", map[string]string{"content": part(a)})
		}
		p := e.run(t, "d-restart", decompYAML("BASEURL", "coordination_mode: decomposition\nupdate_mode: restart", subtasks(abc...)), fn, nil)
		p.agree(t)
		pres := p.presentations()
		require.Len(t, pres, 1)
		assert.ElementsMatch(t, abc, partsIn(pres[0], abc...))
		fenced := 0
		for _, f := range p.folders["agent_a"] {
			var l session.LaunchFile
			if session.ReadJSON(context.Background(), subStore(e.st, p.id), "agents/agent_a/"+f+"/launch.json", &l) == nil && l.Fenced {
				fenced++
				t.Logf("agent_a %s fenced: %s", f, l.Reason)
			}
		}
		assert.Positive(t, fenced, "agent_a's slow step was restarted")
		assert.LessOrEqual(t, len(p.reqs), 60)
	})
}

func TestDecompositionMore(t *testing.T) {
	e := startDecompEnv(t)
	five := []string{"agent_a", "agent_b", "agent_c", "agent_d", "agent_e"}

	// Five agents, every behaviour at once; presenter agent_d never answers
	// (it stops blocked).
	t.Run("five agents mixed", func(t *testing.T) {
		var mu sync.Mutex
		revs := 0
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, five...)
			case a == "agent_b": // stops at once, before peers
				return stopCall("nothing to add", "complete")
			case a == "agent_d": // blocked, never answers
				return stopCall("blocked: no access", "blocked")
			case a == "agent_e" && len(partsIn(r, five...)) < 2: // waits for peers, then stops
				rep := call("list_files", map[string]string{})
				rep.ToolCalls[0].ID = fmt.Sprintf("l%d", len(r.Messages))
				rep.Delay = 200 * time.Millisecond
				if len(r.Messages) > 14 {
					return stopCall("nothing seen", "complete")
				}
				return rep
			case a == "agent_e":
				return stopCall("covered by peers", "complete")
			case a == "agent_c": // keeps answering
				mu.Lock()
				revs++
				k := revs
				mu.Unlock()
				return call("new_answer", map[string]string{"content": fmt.Sprintf("%s revision %d", part(a), k)})
			case r.Contains("PART-" + a):
				return stopCall("done", "complete")
			}
			return call("new_answer", map[string]string{"content": part(a)})
		}
		p := e.run(t, "d-five", decompYAML("BASEURL", "coordination_mode: decomposition\npresenter: agent_d", subtasks(five...)), fn, nil)
		p.agree(t)
		assert.Equal(t, "agent_d", p.res.Winner)
		pres := p.presentations()
		require.Len(t, pres, 1)
		assert.Equal(t, "m-agent_d", pres[0].Model)
		assert.ElementsMatch(t, []string{"agent_a", "agent_c"}, partsIn(pres[0], five...))
		assert.LessOrEqual(t, len(p.reqs), 60)
	})

	// skip_voting in decomposition: agent_c only ever stops, never answers.
	// The session must end (max_steps_per_agent at worst), without an
	// invented part for agent_c.
	t.Run("skip_voting, an agent that never answers", func(t *testing.T) {
		abc := []string{"agent_a", "agent_b", "agent_c"}
		fn := func(r llmtest.Request) llmtest.Reply {
			a := agentOf(r.Model)
			switch {
			case presenting(r):
				return presentReply(r, abc...)
			case a == "agent_c":
				return stopCall("nothing to add", "complete")
			case r.Contains("PART-" + a):
				return stopCall("done", "complete")
			}
			return call("new_answer", map[string]string{"content": part(a)})
		}
		p := e.run(t, "d-skipvote", decompYAML("BASEURL", "coordination_mode: decomposition\nskip_voting: true", subtasks(abc...)), fn, nil)
		p.agree(t)
		t.Logf("agent_c calls %d, folders %v", p.calls("agent_c"), p.folders["agent_c"])
		assert.LessOrEqual(t, p.calls("agent_c"), 10, "agent_c's relaunches are bounded")
		pres := p.presentations()
		require.Len(t, pres, 1)
		assert.ElementsMatch(t, []string{"agent_a", "agent_b"}, partsIn(pres[0], abc...))
	})
}

// Voting mode: an agent's first step is never shown peers' answers, even
// when it runs long while they answer.
func TestVotingFirstAnswersStayIndependent(t *testing.T) {
	e := startDecompEnv(t)
	ids := []string{"agent_a", "agent_b", "agent_c"}
	log := newCallLog()
	fn := func(r llmtest.Request) llmtest.Reply {
		a := agentOf(r.Model)
		switch {
		case presenting(r):
			return call("new_answer", map[string]string{"content": "FINAL by " + a})
		case r.HasTool("vote") && r.Contains("ANSWER-agent_a") && r.Contains("ANSWER-agent_b") && r.Contains("ANSWER-agent_c"):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "best"})
		case r.HasTool("vote") && r.Contains("ANSWER-"+a):
			rep := call("list_files", map[string]string{})
			rep.ToolCalls[0].ID = fmt.Sprintf("l%d", len(r.Messages))
			rep.Delay = 100 * time.Millisecond
			return rep
		case a == "agent_c" && len(r.Messages) < 10:
			rep := call("list_files", map[string]string{})
			rep.ToolCalls[0].ID = fmt.Sprintf("l%d", len(r.Messages))
			rep.Delay = 400 * time.Millisecond
			return rep
		}
		log.answered(a, r.N)
		return call("new_answer", map[string]string{"content": "ANSWER-" + a + " full website plan"})
	}
	yml := "agents:\n"
	for _, id := range ids {
		yml += fmt.Sprintf("  - id: %s\n    backend: {type: openai, model: m-%s, base_url: BASEURL}\n", id, id)
	}
	yml += "orchestrator:\n  orchestrator_timeout_seconds: 240\n"
	p := e.run(t, "v-indep", yml, fn, nil)
	p.agree(t)
	for _, r := range p.reqs {
		a := agentOf(r.Model)
		if presenting(r) || r.N > log.first(a) {
			continue
		}
		for _, o := range ids {
			if o != a {
				assert.False(t, r.Contains("ANSWER-"+o), "request %d of %s (before its first answer) shows %s's answer", r.N, a, o)
			}
		}
		assert.False(t, r.HasTool("vote"), "request %d of %s offered vote before its first answer", r.N, a)
	}
	assert.GreaterOrEqual(t, log.first("agent_c"), 5, "agent_c answered after peers")
}
