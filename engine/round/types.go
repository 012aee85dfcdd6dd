// Package round holds the coordination and presentation policies of the
// agent-step engine (engine/agent): one call runs one agent for one step —
// MassGen's context, the workflow tools, their enforcement and injection at
// safe points — and ends in exactly one workflow action (new_answer, vote or
// stop). Mode present is the presentation: new_answer alone, no duplicate
// check, no peer updates. It knows nothing of Temporal: step mode calls it
// directly and the AgentStep activity wraps it unchanged.
package round

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// Answer is an agent's answer as the engine shows it. Agent is the real id,
// which never reaches the model; the model sees Label.
type Answer struct {
	Agent string `json:"agent"`
	Label string `json:"label"` // agentN.M
	Step  int    `json:"step"`
	Text  string `json:"text,omitempty"`
	// Timestamp is when the answer was stored (RFC 3339); injection takes
	// the newest sources first.
	Timestamp string `json:"timestamp,omitempty"`
	// Workspace is a local directory holding the files delivered with the
	// answer; the running agent can read it under peers/agentN/.
	Workspace string `json:"workspace,omitempty"`
}

// Update is what arrived since an agent last looked.
type Update struct {
	Answers []Answer // the newest answer of each agent that has a newer one
	Human   []string // runtime human input, in arrival order
}

// Inbox supplies unseen peer answers and human input at safe points. It is
// asked with what the agent has seen so far, so it keeps no per-agent state
// and a resumed step asks exactly the same question.
type Inbox interface {
	Unseen(ctx context.Context, seen map[string]int, humanSeen int) (Update, error)
}

// Gate is the submission check of seed 001: it is asked when a new_answer
// is about to be accepted (after the engine's own checks), with what the
// agent has seen, and decides against the answers stored now whether the
// answer limits and fairness allow it. A non-empty refusal tells the model
// why and what to do instead; it is returned as a tool error and costs an
// enforcement attempt. An admitted answer is the one the step records. The
// engine does not ask it again when it resumes a recorded action.
type Gate interface {
	AdmitAnswer(ctx context.Context, seen map[string]int) (refusal string, err error)
}

// Input is everything one step needs.
type Input struct {
	Agent         string   // real id of the running agent
	Agents        []string // every agent of the session, for anonymous ids
	Task          string
	SystemMessage string
	EvalCriteria  []string
	Subtask       string // decomposition mode: this agent's part
	// Answers holds the latest answer of every agent that has one when the
	// step starts, the running agent's own included (seen anonymized alike).
	Answers []Answer
	// HasAnswered is true when the agent already has an answer of its own;
	// until then peer updates are deferred (first-answer protection).
	HasAnswered bool
	Mode        coord.Mode // empty: voting
	// Tally, on a re-vote, is the split tally (anonymous id → votes).
	Tally map[string]int
	// Synthesize asks the presenter to combine answers rather than restate
	// the winner's.
	Synthesize bool
	// Presentation: Winner is the label of the answer that won (the
	// presenter's own latest), Voted whether votes chose it (else a
	// synthesis is neutral), Decomposition whether the presenter assembles
	// the agents' parts instead.
	Winner        string
	Voted         bool
	Decomposition bool

	Model       llm.Model
	ModelName   string
	Temperature *float64
	MaxTokens   *int64

	Workspace *tools.Workspace // nil: no workspace tools
	// Tools are the agent's MCP servers and command tool (nil: none);
	// CallScope names the step's launch in their idempotency keys.
	Tools     agent.Toolbox
	CallScope string
	Inbox     Inbox // nil: no injection
	// Gate checks a new answer at submission (nil: no check); the
	// presentation is never checked.
	Gate Gate

	// Checklist gates vote, stop and new_answer behind submit_checklist
	// (voting_sensitivity: checklist_gated); nil leaves the step ungated.
	Checklist *Checklist

	// MaxOverlap refuses a new answer sharing more than this share of its
	// words with an answer in context (answer_novelty_requirement); 0
	// refuses exact duplicates only.
	MaxOverlap float64

	DisableInjection bool
	// DeferPeerUpdates (defer_peer_updates_until_restart) holds peer
	// answers for the next step, except — with PeerUpdatesBeforeChecklist
	// (allow_midstream_peer_updates_before_checklist_submit) in a gated
	// step — until the first accepted checklist.
	DeferPeerUpdates           bool
	PeerUpdatesBeforeChecklist bool
	// MaxMidstreamInjections caps the peers whose answers are injected
	// into one step (0: none); a peer already injected may deliver its
	// newer revisions.
	MaxMidstreamInjections int
	MaxAttempts            int // enforcement attempts; default 3
	MaxTurns               int // model calls per step; default 30

	// Human is runtime human input that arrived before the step started; it
	// goes into the first user message.
	Human []string
	// Tag names the launch that owns the transcript; Binding fingerprints
	// the step's inputs (engine/step). Both are stored in the transcript;
	// the caller decides from them whether a checkpoint may be resumed.
	Tag     string
	Binding string

	// RoundTimeout is the soft timeout of the step (0: none): once it has
	// passed since the step started, the next safe point injects wrap-up
	// guidance, once. RoundTimeoutGrace later (the hard timeout) only
	// workflow tools may be called; other tool calls are refused, and the
	// MaxDeniedAfterTimeout-th refused call ends the step with an
	// *EnforcementError (reason round_timeout).
	RoundTimeout      time.Duration
	RoundTimeoutGrace time.Duration
	// Now is the clock of the round timeouts; nil means time.Now.
	Now func() time.Time

	// OnChunk is called for every streamed chunk, so a long generation can
	// heartbeat its activity.
	OnChunk func()

	// Checkpoint is called after every model turn and every injection with
	// the whole transcript; Prior is the stored one, resumed when the
	// agent-step engine's rule allows it (agent.Prior), and Logf is told
	// when it does not.
	Checkpoint func(ctx context.Context, t *Transcript) error
	Prior      *agent.Prior
	Logf       func(format string, args ...any)
}

// Transcript is a coordination step's transcript: the conversation and the
// policy's State, stored as trace.jsonl.
type Transcript = agent.Transcript[State]

// State is what the coordination policy keeps in the transcript's state
// line to resume a step.
type State struct {
	SeenSteps map[string]int `json:"seen_steps"`
	// Shown is what the step started with: the step of every answer in its
	// opening context (SeenSteps before any injection). An empty view is
	// kept as {}, not dropped, so a retry can tell it from an old trace.
	Shown map[string]int `json:"shown"`
	// Known holds every answer the agent has been shown (latest per agent);
	// it resolves vote targets and detects duplicate answers.
	Known      []Answer `json:"known"`
	HumanSeen  int      `json:"human_seen"`
	Attempts   int      `json:"attempts"`
	Reasons    []string `json:"reasons,omitempty"`
	Injections int      `json:"injections"`
	// InjectedSources are the peers whose answers were injected in this
	// step, in order: max_midstream_injections_per_round caps their number.
	InjectedSources []string `json:"injected_sources,omitempty"`
	// StartedAt is when the step first started, so the round timeouts
	// count from there across resumes; WrapUpSent records the soft
	// timeout's guidance and Denied the tool calls refused after the hard
	// timeout.
	StartedAt  time.Time `json:"started_at,omitzero"`
	WrapUpSent bool      `json:"wrap_up_sent,omitempty"`
	Denied     int       `json:"timeout_denied,omitempty"`
	// Checklist is the checklist policy's state (gated steps only).
	Checklist *ChecklistState `json:"checklist,omitempty"`
	// Final is the step's action once it is decided; resuming a finished
	// transcript returns it without another model call.
	Final *Outcome `json:"final,omitempty"`
}

// Outcome is the workflow action a step ended in.
type Outcome struct {
	Action coord.Action `json:"action"`
	Answer string       `json:"answer,omitempty"`
	// Target is the real id voted for; TargetLabel what the model named.
	Target      string         `json:"target,omitempty"`
	TargetLabel string         `json:"target_label,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	Summary     string         `json:"summary,omitempty"`
	StopStatus  string         `json:"stop_status,omitempty"`
	SeenSteps   map[string]int `json:"seen_steps"`
	Usage       coord.Usage    `json:"usage"`
	Turns       int            `json:"turns"`
	Transcript  *Transcript    `json:"-"`
}

// Reason codes of enforcement failures, stable for logs and tests.
const (
	ReasonNoWorkflowTool     = "no_workflow_tool"
	ReasonMixedActions       = "mixed_vote_and_answer"
	ReasonMultipleActions    = "multiple_workflow_calls"
	ReasonUnavailableTool    = "unavailable_tool"
	ReasonUnknownTool        = "unknown_tool" // a non-workflow tool not offered this turn
	ReasonInvalidArguments   = "invalid_arguments"
	ReasonVoteWithoutAnswers = "vote_without_answers"
	ReasonUnknownVoteTarget  = "unknown_vote_target"
	ReasonAnswerLimit        = "answer_limit"
	ReasonDuplicateAnswer    = "duplicate_answer"
	ReasonNotNovel           = "answer_not_novel"
	ReasonRoundTimeout       = "round_timeout" // workspace tools called past the hard timeout
	// ReasonAnswerLimitNoVote: an answer limit refused the answer of a
	// step that cannot vote (it has seen no answer); its turn ends.
	ReasonAnswerLimitNoVote = "answer_limit_no_vote"
)

// MaxDeniedAfterTimeout is how many tool calls refused after the hard
// round timeout end the step: a model that ignores the wrap-up and the
// refusals would otherwise run until MaxTurns.
const MaxDeniedAfterTimeout = 3

// EnforcementError means the model did not produce a valid workflow action
// within the allowed attempts. Retrying the same step rarely helps, so the
// activity treats it as non-retryable.
type EnforcementError struct {
	Agent    string
	Attempts int
	Reasons  []string
}

func (e *EnforcementError) Error() string {
	switch e.last() {
	case ReasonRoundTimeout:
		return fmt.Sprintf("agent %s kept calling tools after the round's time was over (%d refused calls; %s)",
			e.Agent, MaxDeniedAfterTimeout, strings.Join(e.Reasons, ", "))
	case ReasonAnswerLimitNoVote:
		return fmt.Sprintf("agent %s's answer was refused by an answer limit that peers reached during its step, and it could not vote yet (%s)",
			e.Agent, strings.Join(e.Reasons, ", "))
	}
	return fmt.Sprintf("agent %s produced no valid workflow action in %d attempts (%s)",
		e.Agent, e.Attempts, strings.Join(e.Reasons, ", "))
}

func (e *EnforcementError) last() string {
	if len(e.Reasons) == 0 {
		return ""
	}
	return e.Reasons[len(e.Reasons)-1]
}

// TurnEnded reports a step whose turn ended without an action through no
// fault of the agent's that another step would repeat: the round timeout
// (seed 001's turn termination), or an answer limit reached by peers while
// it could not vote. The agent goes on with its next step.
func (e *EnforcementError) TurnEnded() bool {
	return e.last() == ReasonRoundTimeout || e.last() == ReasonAnswerLimitNoVote
}

// AnswerRefused reports the turn that ended because an answer limit left
// the step no action: it says nothing of the agent.
func (e *EnforcementError) AnswerRefused() bool { return e.last() == ReasonAnswerLimitNoVote }

// TurnLimitError means the agent kept calling tools without finishing.
type TurnLimitError struct {
	Agent string
	Turns int
}

func (e *TurnLimitError) Error() string {
	return fmt.Sprintf("agent %s used all %d model turns without a workflow action", e.Agent, e.Turns)
}
