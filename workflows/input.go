package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// CoordinationInput starts (or continues) a coordination session. The JSON
// form is what `temporal workflow start --input` takes; config holds the YAML
// config's keys as JSON, absent settings taking their defaults.
type CoordinationInput struct {
	Task         string        `json:"task"`
	Config       config.Config `json:"config"`
	EvalCriteria []string      `json:"eval_criteria,omitempty"`
	// SessionID names the session in storage; empty means the workflow id.
	SessionID string `json:"session_id,omitempty"`
	// MaxStepsBeforeContinue makes a run continue-as-new after this many
	// completed agent steps (0: only when the server suggests it). It exists
	// for tests, which cannot make the server suggest it, and for very long
	// sessions that want small histories.
	MaxStepsBeforeContinue int `json:"max_steps_before_continue,omitempty"`
	// StepHeartbeatSeconds is how long an agent step may go without a
	// heartbeat before Temporal retries it on another worker (default 60).
	// Lower it where workers die often; tests lower it to see a retry fast.
	StepHeartbeatSeconds int `json:"step_heartbeat_seconds,omitempty"`
	// State is set by the workflow itself when it continues as new; leave it
	// out when starting a session.
	State *CarriedState `json:"state,omitempty"`

	// decodeErr is why the JSON input could not be decoded. UnmarshalJSON
	// keeps it instead of failing, because a decoding error inside the SDK
	// fails the workflow with a retryable error that names no field;
	// normalize reports it as invalid input.
	decodeErr string
}

// UnmarshalJSON decodes the input strictly (config.CheckJSON: unknown and
// repeated keys, api_key); those problems and a JSON value of the wrong
// type are reported by normalize as a non-retryable error naming the field.
func (in *CoordinationInput) UnmarshalJSON(data []byte) error {
	type plain CoordinationInput // drops this method, avoiding recursion
	var p plain
	if err := strictUnmarshal(data, &p); err != "" {
		*in = CoordinationInput{decodeErr: err}
		return nil
	}
	*in = CoordinationInput(p)
	return nil
}

// strictUnmarshal decodes data into v, which must be a pointer, and says
// what is wrong with it: every key config.CheckJSON refuses, or else the
// decoding error. "" means v holds the input.
func strictUnmarshal(data []byte, v any) string {
	if problems := config.CheckJSON(data, reflect.TypeOf(v)); len(problems) > 0 {
		return strings.Join(problems, "; ")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return describeDecodeError(err)
	}
	return ""
}

func describeDecodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s: must be %s, not a JSON %s", te.Field, jsonKind(te.Type.Kind()), te.Value)
	}
	return "the input is not valid JSON: " + err.Error()
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	default:
		return "a number"
	}
}

// CarriedState is everything a continued run needs that is not in the
// session's storage. A run holds it as one value, updates it in place and
// hands it to the next run as is, so no field can be forgotten on the way.
// Continue-as-new waits for running steps first, so no agent is running in
// Ledger.
type CarriedState struct {
	Ledger      coord.Ledger `json:"ledger"`
	AnswerOrder []string     `json:"answer_order"`
	Usage       coord.Usage  `json:"usage"`
	RevoteRound int          `json:"revote_round"`
	// Revote lists agents still owed a step of the current re-vote, and
	// RevoteTally is the anonymous tally they are shown.
	Revote      []string       `json:"revote,omitempty"`
	RevoteTally map[string]int `json:"revote_tally,omitempty"`
	Launches    int            `json:"launches"`
	InboxSeq    int            `json:"inbox_seq"`
	StartedAt   time.Time      `json:"started_at"`
	Deadline    time.Time      `json:"deadline"`
	Session     string         `json:"session"`
	// SearchAttributes records whether ConclavePhase/ConclaveWinner exist
	// on the namespace.
	SearchAttributes bool `json:"search_attributes"`
	// Owner is the run chain the session was created for, and InputsHash
	// the hash of the task, config and criteria it stores; both are empty
	// for sessions created before owners (steps then carry the inputs).
	Owner      *contract.Owner `json:"owner,omitempty"`
	InputsHash string          `json:"inputs_hash,omitempty"`
	// EvalRound is the latest round evaluation the workflow ran (managed
	// round evaluator), EvalVisible the answers it read, EvalOK whether it
	// succeeded: gated steps launched on those answers work from it.
	EvalRound   int            `json:"eval_round,omitempty"`
	EvalVisible map[string]int `json:"eval_visible,omitempty"`
	EvalOK      bool           `json:"eval_ok,omitempty"`
	// Runs counts the runs before this one.
	Runs      int    `json:"runs"`
	LastError string `json:"last_error,omitempty"`
	// NoVote: the session ends without a vote round (noVoteRoundChange),
	// decided once when it starts.
	NoVote bool `json:"no_vote,omitempty"`

	// TakenSteps maps an agent to the highest step number a launch of it
	// gave up (fenced off, or held by another launch): its next step comes
	// after it, since that folder is closed (fencedStepsChange).
	TakenSteps map[string]int `json:"taken_steps,omitempty"`
	// EndedTurns counts, per agent, its steps in a row that the round
	// timeout ended (turnEndedChange); an action clears it.
	EndedTurns map[string]int `json:"ended_turns,omitempty"`
}

// CoordinationResult is the outcome of a session that produced an answer.
type CoordinationResult struct {
	Status string `json:"status"`
	// Winner is the real id of the agent whose answer was presented (the
	// presenter in decomposition mode).
	Winner string `json:"winner"`
	// FinalAnswer is the final answer, up to 64 KiB; a longer one is a
	// preview (Truncated) and the whole text is under Keys.
	FinalAnswer string         `json:"final_answer"`
	Truncated   bool           `json:"truncated,omitempty"`
	Session     string         `json:"session"`
	Votes       map[string]int `json:"votes"`
	Usage       coord.Usage    `json:"usage"`
	// Keys are the storage keys of the final answer.
	Keys []string `json:"keys,omitempty"`
	// FailedAgents maps each agent dropped on the way to why it failed.
	FailedAgents map[string]string `json:"failed_agents,omitempty"`
	// PresentationFallback, when set, is why the model-backed presentation
	// failed and the winner's stored answer was used instead.
	PresentationFallback string `json:"presentation_fallback,omitempty"`
}

// HumanInput is the argument of the human_input update. Its JSON form is
// {"text": "…"}; a bare JSON string is accepted too, so
// `temporal workflow update execute --input '"…"'` works.
type HumanInput struct {
	Text string `json:"text"`
}

// UnmarshalJSON accepts {"text": "…"} or "…".
func (h *HumanInput) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		h.Text = s
		return nil
	}
	type plain HumanInput // drops this method, avoiding recursion
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf(`human input must be a JSON string or {"text": "…"}: %w`, err)
	}
	*h = HumanInput(p)
	return nil
}

// validateHumanInput says what is wrong with a human input, or nil.
func validateHumanInput(h HumanInput) error {
	switch {
	case strings.TrimSpace(h.Text) == "":
		return fmt.Errorf("human input is empty: send some text for the agents")
	case len(h.Text) > contract.MaxHumanInputBytes:
		return fmt.Errorf("human input is %d bytes, more than the %d allowed: shorten it or put the details in a file the agents can read",
			len(h.Text), contract.MaxHumanInputBytes)
	}
	return nil
}

// normalize applies the config defaults and checks the input, returning a
// non-retryable error naming every problem, so a user of
// `temporal workflow start` sees why the session did not start. limits
// applies the contract's bounds on task, config and team size (not to runs
// recorded before them).
func normalize(in *CoordinationInput, workflowID string, limits bool) error {
	var problems []string
	if in.decodeErr != "" {
		return temporal.NewNonRetryableApplicationError(
			"invalid coordination input: "+in.decodeErr, contract.ErrTypeInvalidInput, nil)
	}
	if strings.TrimSpace(in.Task) == "" {
		problems = append(problems, `task: required; say what the agents should do, e.g. {"task": "Write a haiku about durable execution"}`)
	}
	in.Config.ApplyDefaults()
	// Validate ranges over the prices map only to collect its keys, which it
	// sorts before use: deterministic.
	//workflowcheck:ignore
	if err := in.Config.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			problems = append(problems, "config."+line)
		}
	}
	if n := len(in.EvalCriteria); n > config.MaxCriteria {
		problems = append(problems, fmt.Sprintf("eval_criteria: %d criteria, at most %d are allowed", n, config.MaxCriteria))
	}
	if in.StepHeartbeatSeconds < 0 {
		problems = append(problems, fmt.Sprintf("step_heartbeat_seconds: %d is not allowed; use a positive number or leave it out",
			in.StepHeartbeatSeconds))
	}
	if in.MaxStepsBeforeContinue < 0 {
		problems = append(problems, fmt.Sprintf("max_steps_before_continue: %d is not allowed; use 0 (server decides) or more",
			in.MaxStepsBeforeContinue))
	}
	if limits {
		problems = append(problems, sizeProblems(in)...)
	}
	if in.SessionID != "" && !contract.ValidSessionID(in.SessionID) {
		problems = append(problems, fmt.Sprintf("session_id: %q cannot name a storage folder; %s", in.SessionID, contract.SessionIDRule))
	}
	if in.SessionID == "" && !contract.ValidSessionID(workflowID) {
		problems = append(problems, fmt.Sprintf("session_id: the workflow id %q cannot name a storage folder; pass a session_id of letters, digits, '.', '_' or '-'", workflowID))
	}
	if s := in.State; s != nil && !sameAgents(s.Ledger, in.Config.AgentIDs()) {
		problems = append(problems, "state.ledger: its agents differ from config.agents; state is written by the workflow itself, leave it out")
	}
	if len(problems) > 0 {
		return temporal.NewNonRetryableApplicationError(
			"invalid coordination input: "+strings.Join(problems, "; "), contract.ErrTypeInvalidInput, nil)
	}
	if in.SessionID == "" {
		in.SessionID = workflowID
	}
	return nil
}

func sameAgents(l coord.Ledger, ids []string) bool {
	if len(l.Agents) != len(ids) {
		return false
	}
	for i, a := range l.Agents {
		if a.ID != ids[i] {
			return false
		}
	}
	return true
}

// sizeProblems names the inputs above the contract's limits: a larger task
// or team would make the start input, InitSession's input or the status
// snapshots too large for Temporal (docs/temporal.md, "Limits").
func sizeProblems(in *CoordinationInput) []string {
	var problems []string
	if n := len(in.Task); n > contract.MaxTaskBytes {
		problems = append(problems, fmt.Sprintf("task: %d bytes, at most %d (%.1f MiB) are allowed; put large material in files the agents read, or shorten it",
			n, contract.MaxTaskBytes, float64(contract.MaxTaskBytes)/(1<<20)))
	}
	if n := len(in.Config.Agents); n > contract.MaxAgents {
		problems = append(problems, fmt.Sprintf("config.agents: %d agents, at most %d are allowed", n, contract.MaxAgents))
	}
	// Marshal sorts map keys: deterministic.
	//workflowcheck:ignore
	cfg, err := json.Marshal(in.Config)
	//workflowcheck:ignore
	crit, _ := json.Marshal(in.EvalCriteria)
	if err == nil && len(cfg)+len(crit) > contract.MaxConfigBytes {
		problems = append(problems, fmt.Sprintf("config and eval_criteria: %d bytes of JSON, at most %d are allowed; shorten the system messages or criteria",
			len(cfg)+len(crit), contract.MaxConfigBytes))
	}
	return problems
}
