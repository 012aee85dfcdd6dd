package contract

import (
	"encoding/json"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/llm/chat"
	"github.com/conclave-ai/conclave/engine/pipeline"
)

// PipelineDefinition is what a pipeline run runs; config holds no secrets.
type PipelineDefinition struct {
	Title   string          `json:"title,omitempty"`
	Graph   pipeline.Graph  `json:"graph"`
	Context string          `json:"context,omitempty"`
	Backend *config.Backend `json:"backend,omitempty"`
}

// InitPipelineInput stores pipeline.json and prepares the project context.
type InitPipelineInput struct {
	RunID      string             `json:"run_id"`
	Definition PipelineDefinition `json:"definition"`
	Input      string             `json:"input"`
	ResumeFrom string             `json:"resume_from,omitempty"`
	// Owner is the run chain the run belongs to: InitPipeline creates
	// owner.json for it exclusively, and refuses a run id that another
	// workflow (or an earlier start of the same id) created.
	Owner Owner `json:"owner"`
}

// InitPipelineResult is where the run is stored and the project summary
// every step gets a rendering of (ProjectSummary.For).
type InitPipelineResult struct {
	Location string `json:"location"`
	// Summary is the project summary (seed 004), extracted once per run
	// and stored as context.json; nil without a project context.
	Summary *pipeline.ProjectSummary `json:"summary,omitempty"`
	Usage   coord.Usage              `json:"usage"`
}

// PipelineStepInput runs one step. Seq is assigned by the workflow, so a
// retried activity resumes the same folder.
type PipelineStepInput struct {
	RunID string `json:"run_id"`
	// SessionRef is the run's owner and location, checked before the step
	// writes.
	SessionRef

	Seq     int             `json:"seq"`
	Step    string          `json:"step"`
	Title   string          `json:"title,omitempty"`
	Graph   pipeline.Graph  `json:"graph"`
	Backend *config.Backend `json:"backend,omitempty"`
	Input   string          `json:"input"`
	// Context is the project summary as this step is given it.
	Context string `json:"context,omitempty"`
	// Previous is the id and pass/fail of the step that ran before this
	// one, nothing else.
	Previous *pipeline.Previous `json:"previous,omitempty"`
	// From is the folder whose workspace/ this step starts from; "" starts
	// with an empty workspace.
	From string `json:"from,omitempty"`
	// ResumeKey and Resume bring a caller back from a call: the messages
	// stored at ResumeKey, then Resume.
	ResumeKey string         `json:"resume_key,omitempty"`
	Resume    []chat.Message `json:"resume,omitempty"`
}

// PipelineStepResult is how a step ended, small enough for history.
type PipelineStepResult struct {
	Seq         int               `json:"seq"`
	Step        string            `json:"step"`
	Folder      string            `json:"folder"`
	Status      pipeline.Status   `json:"status"`
	Summary     string            `json:"summary,omitempty"`
	Request     *pipeline.Request `json:"request,omitempty"`
	MessagesKey string            `json:"messages_key,omitempty"`
	// Evidence are seed 004's evidencePaths: stored paths, relative to the
	// run, of the step's evidence files as they were in its workspace when
	// it ended.
	Evidence   []string    `json:"evidencePaths,omitempty"`
	Error      string      `json:"error,omitempty"`
	Usage      coord.Usage `json:"usage"`
	Turns      int         `json:"turns"`
	DurationMs int64       `json:"duration_ms"`
	// Session is the Coordination session of a coordination step.
	Session string `json:"session,omitempty"`
	// Reused marks a step taken over from an earlier run by resume.
	Reused bool `json:"reused,omitempty"`
}

// PipelineReuseInput asks which steps of an earlier run a resumed run can
// take over, and copies their folders.
type PipelineReuseInput struct {
	RunID string `json:"run_id"`
	SessionRef
	From string `json:"from"`
}

// PipelineReuseResult lists the earlier run's leading completed steps.
type PipelineReuseResult struct {
	Steps []PipelineStepResult `json:"steps"`
}

// WritePipelineResultInput stores result.json.
type WritePipelineResultInput struct {
	RunID string `json:"run_id"`
	SessionRef
	Result PipelineResult `json:"result"`
}

// PipelineResult is result.json (seed 004): the run's status and each
// step. The Pipeline workflow returns the same value.
type PipelineResult struct {
	RunID      string              `json:"run_id"`
	Title      string              `json:"title,omitempty"`
	Status     string              `json:"status"`
	Reason     string              `json:"reason,omitempty"`
	Current    string              `json:"current,omitempty"`
	Steps      []PipelineStepEntry `json:"steps"`
	Usage      coord.Usage         `json:"usage"`
	ResumeFrom string              `json:"resume_from,omitempty"`
	Location   string              `json:"location,omitempty"`
}

// PipelineStepEntry is one step of result.json.
type PipelineStepEntry struct {
	Seq        int             `json:"seq"`
	Name       string          `json:"name"`
	Status     pipeline.Status `json:"status"`
	DurationMs int64           `json:"duration_ms"`
	Usage      coord.Usage     `json:"usage"`
	// Evidence are seed 004's evidencePaths, relative to the run folder.
	Evidence []string `json:"evidencePaths"`
	Error    string   `json:"error,omitempty"`
	Summary  string   `json:"summary,omitempty"`
	Folder   string   `json:"folder,omitempty"`
	Session  string   `json:"session,omitempty"`
	Reused   bool     `json:"reused,omitempty"`
}

// AdoptSessionInput stores a coordination step's outcome in its folder:
// the workspace it started from with the session's final workspace over it.
type AdoptSessionInput struct {
	RunID string `json:"run_id"`
	SessionRef
	Folder  string             `json:"folder"`
	From    string             `json:"from,omitempty"`
	Session string             `json:"session"`
	Result  PipelineStepResult `json:"result"`
}

// UnmarshalJSON also reads "evidence", the name output.json files and
// histories written before used.
func (r *PipelineStepResult) UnmarshalJSON(data []byte) error {
	type plain PipelineStepResult
	var v struct {
		plain
		Legacy []string `json:"evidence"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = PipelineStepResult(v.plain)
	if r.Evidence == nil {
		r.Evidence = v.Legacy
	}
	return nil
}

// UnmarshalJSON also reads "evidence", the name result.json files and
// histories written before used.
func (e *PipelineStepEntry) UnmarshalJSON(data []byte) error {
	type plain PipelineStepEntry
	var v struct {
		plain
		Legacy []string `json:"evidence"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*e = PipelineStepEntry(v.plain)
	if e.Evidence == nil {
		e.Evidence = v.Legacy
	}
	return nil
}
