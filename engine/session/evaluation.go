package session

// The round evaluator's files: one folder per round it prepared,
// evaluator/<NNN>/ (NNN the round, zero-padded like a step).
const (
	EvaluatorPrefix = "evaluator/"

	critiquePacketFile = "critique_packet.md"
	nextTasksFile      = "next_tasks.json"
	evaluationFile     = "evaluation.json"
)

// EvaluationPrefix is the folder of the evaluation before round n.
func EvaluationPrefix(round int) string { return EvaluatorPrefix + StepName(round) + "/" }

// CritiquePacketKey is where the evaluator's critique packet is stored.
func CritiquePacketKey(round int) string { return EvaluationPrefix(round) + critiquePacketFile }

// NextTasksKey is where the evaluator's task plan is stored, as it gave it.
func NextTasksKey(round int) string { return EvaluationPrefix(round) + nextTasksFile }

// EvaluationKey is the evaluation's summary, written last: an evaluation
// without it did not finish.
func EvaluationKey(round int) string { return EvaluationPrefix(round) + evaluationFile }

// EvaluationTraceKey is the evaluator's transcript and checkpoint.
func EvaluationTraceKey(round int) string { return EvaluationPrefix(round) + traceFile }

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
