package activities

// Storage keys of a pipeline run, relative to <run_id>/.
const (
	PipelineDefKey    = "pipeline.json"
	PipelineResultKey = "result.json"
	PipelineContext   = "context.md"
)
