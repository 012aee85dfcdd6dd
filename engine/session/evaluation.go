package session

// EvaluatorPrefix holds the evaluations the workflow runs before rounds
// (orchestrator_managed_round_evaluator): evaluator/<NNN>/, NNN the round
// it prepared, zero-padded like a step.
const EvaluatorPrefix = "evaluator/"

// EvalDir is the folder of one round evaluation, with a trailing slash:
// evaluator/<NNN>/ when the workflow ran it, agents/<id>/<NNN>/evaluator/
// when the agent's own step did.
type EvalDir string

// SessionEvaluation is the workflow-run evaluation before round n.
func SessionEvaluation(round int) EvalDir { return EvalDir(EvaluatorPrefix + StepName(round) + "/") }

// StepEvaluation is the evaluation an agent's step ran before its work.
func StepEvaluation(agent string, step int) EvalDir {
	return EvalDir(StepPrefix(agent, step) + "evaluator/")
}

// Packet is critique_packet.md.
func (d EvalDir) Packet() string { return string(d) + "critique_packet.md" }

// Tasks is next_tasks.json, as the evaluator gave it.
func (d EvalDir) Tasks() string { return string(d) + "next_tasks.json" }

// Summary is evaluation.json, written last: an evaluation without it did
// not finish.
func (d EvalDir) Summary() string { return string(d) + "evaluation.json" }

// Trace is the evaluator's transcript and checkpoint.
func (d EvalDir) Trace() string { return string(d) + traceFile }

// EvaluationFile is evaluation.json: what the evaluator read and whether
// its plan can be worked from (next_tasks_valid) or the next round takes
// the degraded path (the critique packet as the basis of a checklist).
type EvaluationFile struct {
	Round          int      `json:"round"`
	Labels         []string `json:"labels"`
	NextTasksValid bool     `json:"next_tasks_valid"`
	NextTasksError string   `json:"next_tasks_error,omitempty"`
	Timestamp      string   `json:"timestamp"`
}

// ChecklistKey is where a gated step's checklist state is stored: every
// submit_checklist result, the accepted verdict and the improvement plan.
func ChecklistKey(agent string, step int) string { return StepPrefix(agent, step) + "checklist.json" }
