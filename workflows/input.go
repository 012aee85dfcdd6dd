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
	// checkInput reports it as invalid input.
	decodeErr string
}

// UnmarshalJSON decodes the input strictly (config.CheckJSON: unknown and
// repeated keys, api_key); those problems and a JSON value of the wrong
// type are reported by checkInput as a non-retryable error naming the field.
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
// session's storage. A run hands it to the next run as one value, so no
// field can be forgotten on the way. Continue-as-new waits for running
// steps first, so nothing runs in Machine.
type CarriedState struct {
	// Machine is the coordination state machine's state, and Rules what
	// it runs by (InitSession's plan).
	Machine coord.State `json:"machine"`
	Rules   coord.Rules `json:"rules"`
	// SessionID names the session in storage.
	SessionID string    `json:"session_id"`
	StartedAt time.Time `json:"started_at"`
	Deadline  time.Time `json:"deadline"`
	Session   string    `json:"session"`
	// SearchAttributes records whether ConclavePhase/ConclaveWinner exist
	// on the namespace.
	SearchAttributes bool `json:"search_attributes"`
	// Owner is the run chain the session was created for, and InputsHash
	// the hash of the task, config and criteria it stores.
	Owner      *contract.Owner `json:"owner,omitempty"`
	InputsHash string          `json:"inputs_hash"`
	// Runs counts the runs before this one.
	Runs int `json:"runs"`
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

// checkInput reports an input that cannot be decoded, or whose own
// settings are out of range, as a non-retryable error naming the field.
// The task, config and criteria are checked by InitSession, whose result
// is in history (contract.PrepareSession).
func checkInput(in CoordinationInput) error {
	var problems []string
	if in.decodeErr != "" {
		problems = append(problems, in.decodeErr)
	}
	if in.StepHeartbeatSeconds < 0 {
		problems = append(problems, fmt.Sprintf("step_heartbeat_seconds: %d is not allowed; use a positive number or leave it out",
			in.StepHeartbeatSeconds))
	}
	if in.MaxStepsBeforeContinue < 0 {
		problems = append(problems, fmt.Sprintf("max_steps_before_continue: %d is not allowed; use 0 (server decides) or more",
			in.MaxStepsBeforeContinue))
	}
	if len(problems) > 0 {
		return temporal.NewNonRetryableApplicationError(
			"invalid coordination input: "+strings.Join(problems, "; "), contract.ErrTypeInvalidInput, nil)
	}
	return nil
}
