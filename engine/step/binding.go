package step

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// shown is what binds a checkpoint to one attempt: the session's owner, the
// step, and everything the step was shown when it started. Its JSON
// encoding is canonical (fixed field order, sorted answers, sorted map
// keys), so equal inputs always give the same fingerprint.
type shown struct {
	Owner      string         `json:"owner"`
	Agent      string         `json:"agent"`
	Step       int            `json:"step"`
	Tag        string         `json:"tag"`
	Task       string         `json:"task"`
	Subtask    string         `json:"subtask"`
	Mode       coord.Mode     `json:"mode"`
	Visible    []visible      `json:"visible"`
	Criteria   []string       `json:"criteria"`
	Tally      map[string]int `json:"tally"`
	Synthesize bool           `json:"synthesize"`
	// Checklist is the step's checklist policy (criteria, budget, the
	// evaluator's plan or packet); absent when the step is not gated, so
	// ungated steps keep the fingerprint they always had.
	Checklist *round.Checklist `json:"checklist,omitempty"`
}

// visible is one answer the step was shown, by agent and step.
type visible struct {
	Agent string `json:"agent"`
	Step  int    `json:"step"`
}

// binding is the fingerprint of a step attempt's inputs (sha256 of shown,
// in hex), stored in its transcript. A checkpoint is resumed only when the
// fingerprint matches: an identical retry continues without paying again,
// while a relaunch with another task, mode, criteria, launch tag or set of
// visible answers starts fresh, so it never votes on what it was shown
// before.
func binding(owner string, stepNo int, in *round.Input) string {
	v := shown{
		Owner: owner, Agent: in.Agent, Step: stepNo, Tag: in.Tag, Task: in.Task, Subtask: in.Subtask,
		Mode: in.Mode, Criteria: in.EvalCriteria, Tally: in.Tally, Synthesize: in.Synthesize, Checklist: in.Checklist,
	}
	for _, a := range in.Answers {
		v.Visible = append(v.Visible, visible{Agent: a.Agent, Step: a.Step})
	}
	sort.Slice(v.Visible, func(i, j int) bool { return v.Visible[i].Agent < v.Visible[j].Agent })
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings, ints and a map of them always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// prior is the stored checkpoint at key for the agent-step engine, which
// resumes it or — damaged, of other inputs, hand-edited — keeps a copy,
// says why through logf and starts the step fresh (agent.Prior).
func prior(st storage.Store, key string, data []byte, stored bool) *agent.Prior {
	if !stored {
		return nil
	}
	return &agent.Prior{Store: st, Key: key, Data: data}
}

// sameLaunchView is what a step is shown when its caller did not say
// (o.Visible nil): a retry of a tagged launch — a Temporal activity tried
// again, whose launch number is its tag — is shown exactly what its first
// attempt was shown, as that attempt's checkpoint records, so peers'
// answers stored meanwhile do not make the identical retry pay again (they
// still arrive by injection). Step mode has no launch tag: each launch is
// shown the session as it is.
func sameLaunchView(o Options, prior *round.Transcript) map[string]int {
	if o.Visible != nil || o.Tag == "" || prior == nil || prior.Tag != o.Tag || prior.State.Shown == nil {
		return o.Visible
	}
	return prior.State.Shown
}

// shownAnswer is the answer of a the step is shown: its latest, or with
// visible its latest at or before visible[a.ID]; nil for none.
func shownAnswer(a *session.Agent, visible map[string]int) *session.Answer {
	if visible == nil {
		return a.Latest()
	}
	var shown *session.Answer
	for i := range a.Answers {
		if a.Answers[i].Step <= visible[a.ID] {
			shown = &a.Answers[i]
		}
	}
	return shown
}
