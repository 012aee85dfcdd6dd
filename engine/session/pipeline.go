package session

// Keys of a pipeline run, relative to <run_id>/. A run shares the session's
// store and its conventions: JSON written by WriteJSON, workspaces as folders.
const (
	PipelineDefKey     = "pipeline.json" // the definition and input the run was started with
	PipelineResultKey  = "result.json"   // seed 004's result, rewritten after every step
	PipelineContextKey = "context.json"  // the project summary every step is given, extracted once per run
)

// StepTraceKey is a pipeline step's transcript and checkpoint in its folder
// (pipeline.StepFolder, as for the keys below), in the same
// trace.jsonl format as an agent step's. Folders written before that format
// hold trace.json instead, which is never read: such a step starts fresh.
func StepTraceKey(folder string) string { return folder + "/" + traceFile }

// StepOutputKey is a pipeline step's output.json: its result in full.
func StepOutputKey(folder string) string { return folder + "/output.json" }

// StepMessagesKey holds the messages of a step that called another, for the
// caller's return; they stay out of workflow history.
func StepMessagesKey(folder string) string { return folder + "/messages.json" }

// StepWorkspacePrefix is the folder of the files a pipeline step left,
// with a trailing slash.
func StepWorkspacePrefix(folder string) string { return folder + "/" + workspaceDir + "/" }
