// Package contract is what Conclave's workflows and activities agree on:
// the names they are registered and called by, every activity's input and
// output, the error types a retry policy must not retry, the limits on what
// enters workflow history, and the session-id rule. Workflow history
// records these values, so their names and JSON shapes are part of every
// running session: change them only with replay coverage.
//
// The package is pure (the standard library and the pure engine packages),
// so workflow code that imports it never links the S3 SDK, openai-go or the
// activities' own dependencies.
package contract

// Names under which the workflows and their handlers are known to clients
// (`temporal workflow start --type Coordination`, the CLI, the Web UI).
const (
	CoordinationName = "Coordination"
	// QueryStatus answers coord.Status, the same shape as status.json.
	QueryStatus = "status"
	// UpdateHumanInput takes one human input and returns its inbox number.
	UpdateHumanInput = "human_input"

	PipelineName = "Pipeline"
	// QueryProgress answers the run's result.json so far.
	QueryProgress = "progress"
	// QueryInput returns the run's input, so `conclave pipeline resume`
	// can start the same definition again.
	QueryInput = "input"
)

// Activity names as registered on the worker (and shown in the Web UI).
// Workflows call activities by these names, so they need not link the
// activities' implementation.
const (
	NameInitSession    = "InitSession"
	NameAgentStep      = "AgentStep"
	NamePresent        = "Present"
	NameWriteStatus    = "WriteStatus"
	NameWriteInbox     = "WriteInbox"
	NameSearchAttrsSet = "SearchAttributesAvailable"
	NameFenceStep      = "FenceStep"

	NameInitPipeline        = "InitPipeline"
	NamePipelineStep        = "PipelineStep"
	NamePipelineReuse       = "PipelineReuse"
	NameWritePipelineResult = "WritePipelineResult"
	NameAdoptSession        = "AdoptSession"
)

// Search attributes a namespace may define (keyword type) to list sessions
// by phase and winner. The workflow upserts them only when the
// SearchAttributesAvailable activity says they exist: upserting an
// unregistered attribute would fail every workflow task.
const (
	SearchAttrPhase  = "ConclavePhase"
	SearchAttrWinner = "ConclaveWinner"
	// SearchAttrServeKey is the name (never the secret) of the API key a
	// `conclave serve` run was started with, set when the run starts.
	SearchAttrServeKey = "ConclaveServeKey"
)

// Application error types. The workflow's retry policies name the
// activities' non-retryable ones (NonRetryable); clients match the
// workflows' own to tell why a run ended.
const (
	// ErrTypeEnforcement: an agent exhausted its enforcement attempts or
	// its turn limit; running the step again would fail the same way.
	ErrTypeEnforcement = "EnforcementError"
	// ErrTypeConfig: the config, an input or a stored checkpoint is unusable.
	ErrTypeConfig = "ConfigError"
	// ErrTypeModel: the model endpoint rejected the request (400/401/403/404).
	ErrTypeModel = "ModelRejected"
	// ErrTypeModelUnavailable: the model is busy or unreachable; retried,
	// after the server's Retry-After when it sent one.
	ErrTypeModelUnavailable = "ModelUnavailable"

	// ErrTypeSessionOwned: the session belongs to another workflow (or
	// existed before it); a session belongs to one workflow run chain.
	ErrTypeSessionOwned = "SessionOwned"
	// ErrTypeWrongStorage: this worker's storage does not hold the session
	// (workers on one task queue configured with different storage). It is
	// retried, so a worker with the session's storage takes the attempt.
	ErrTypeWrongStorage = "WrongStorage"

	// ErrTypeTurnEnded: an agent step kept calling tools after the
	// round's hard timeout and was ended without an action (seed 001's
	// turn termination). Running it again would resume the same dead end;
	// the workflow relaunches the agent with the next step instead, and
	// drops it after a few in a row.
	ErrTypeTurnEnded = "TurnEnded"
	// ErrTypeAnswerRefused: peers reached an answer limit while an agent's
	// step that could not vote yet (its first) was running, so its answer
	// was refused and no action was left to it. Not the agent's fault:
	// the workflow relaunches it, vote-only, without counting it.
	ErrTypeAnswerRefused = "AnswerRefused"
	// ErrTypeSuperseded: an agent step found its folder fenced off by the
	// workflow, or held by another launch of the same step number; it
	// wrote nothing but its checkpoint. Returned as non-retryable.
	ErrTypeSuperseded = "StepSuperseded"

	// ErrTypeInvalidInput: a workflow's input cannot run; the message names
	// every problem.
	ErrTypeInvalidInput = "InvalidInput"
	// ErrTypeAllAgentsFailed: every agent of a session failed.
	ErrTypeAllAgentsFailed = "AllAgentsFailed"
	// ErrTypeNoAnswers: a session ended (timeout, stall) without any answer.
	ErrTypeNoAnswers = "NoAnswers"
	// ErrTypePresentFailed: the final answer could not be stored.
	ErrTypePresentFailed = "PresentFailed"
	// ErrTypePipelineFailed: a pipeline run did not complete; the error's
	// details hold the run's result.json.
	ErrTypePipelineFailed = "PipelineFailed"
)

// NonRetryable lists the activity error types that retrying cannot fix, for
// RetryPolicy.NonRetryableErrorTypes. It returns a new slice each time, so
// no caller can change another's policy.
func NonRetryable() []string {
	return []string{ErrTypeEnforcement, ErrTypeConfig, ErrTypeModel, ErrTypeSessionOwned}
}
