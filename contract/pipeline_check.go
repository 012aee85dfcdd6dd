package contract

import (
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/pipeline"
)

// CheckPipeline checks a pipeline run's definition and input, returning an
// error naming every problem (the caller makes it a non-retryable
// ErrTypeInvalidInput). InitPipeline runs it before it stores anything,
// so its result is in history and a replay never checks again; the CLI
// runs it before it starts a run.
func CheckPipeline(in InitPipelineInput) error {
	problems := backendProblems(in.Definition)
	problems = append(problems, PipelineSizeProblems(in.Definition, in.Input)...)
	if strings.TrimSpace(in.Input) == "" {
		problems = append(problems, `input: required; say what the pipeline should work on, e.g. {"input": "Build the landing page", "definition": {…}}`)
	}
	for _, s := range in.Definition.Graph.Steps {
		switch {
		case s.Kind == pipeline.KindCoordination && s.Team != nil:
			team := *s.Team
			team.ApplyDefaults()
			if err := team.Validate(); err != nil {
				problems = append(problems, fmt.Sprintf("step %q: team: %s", s.Name, strings.ReplaceAll(err.Error(), "\n", "; ")))
			}
		case s.Kind != pipeline.KindCoordination && s.Backend == nil && in.Definition.Backend == nil:
			problems = append(problems, fmt.Sprintf("step %q: no backend, and definition.backend (the default) is not set", s.Name))
		}
	}
	if !ValidSessionID(in.RunID) {
		problems = append(problems, fmt.Sprintf("the workflow id %q cannot name a storage folder; use letters, digits, '.', '_' or '-'", in.RunID))
	}
	if err := in.Definition.Graph.Validate(); err != nil {
		problems = append(problems, "definition.graph: "+strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if in.ResumeFrom != "" && (!ValidSessionID(in.ResumeFrom) || in.ResumeFrom == in.RunID) {
		problems = append(problems, fmt.Sprintf("resume_from: %q must be the id of another, earlier run", in.ResumeFrom))
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid pipeline input: %s", strings.Join(problems, "; "))
	}
	return nil
}

// backendProblems validates the pipeline's default backend and every
// step's as a session config's backends are (config.ValidateBackend), so
// a workflow started with any client is held to what the CLI checks.
func backendProblems(d PipelineDefinition) []string {
	var problems []string
	check := func(path string, b *config.Backend) {
		if b == nil {
			return
		}
		if err := config.ValidateBackend(path, *b); err != nil {
			problems = append(problems, "definition."+strings.ReplaceAll(err.Error(), "\n", "; definition."))
		}
	}
	check("backend", d.Backend)
	for i, s := range d.Graph.Steps {
		check(fmt.Sprintf("graph.steps[%d].backend", i), s.Backend)
	}
	return problems
}
