// Package pipeline is the step graph of seed 002: named steps, static jumps
// (NextStepJump), the model's own jumps and calls within the destinations a
// controller allows (DynamicStepJump, StepJumpController), and a call stack
// that restores a caller's messages. The graph, its controller, its state
// machine (Advance), the step tools' specs and parsers and the step message
// are pure and deterministic — all state is one JSON-serializable value — so
// a Temporal workflow can drive them; they use package llm for its message
// type only, never a model. One file does I/O: load.go reads pipeline and
// scenario files from disk for the command line, and workflow code never
// calls it. Running a step with a model is engine/pipeline/runner's.
package pipeline

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/engine/config"
)

// Status is how a step ended (seed 002), plus failed and not_run.
type Status string

// Step statuses.
const (
	Completed     Status = "completed"
	Cancelled     Status = "cancelled"
	Error         Status = "error"
	MaxIterations Status = "max_iterations"
	CallPending   Status = "call_pending"
	// Failed: the step reported failure (complete_step with status fail).
	Failed Status = "failed"
	// NotRun marks steps a run never reached, in result listings.
	NotRun Status = "not_run"
)

// On-failure policies besides a step name.
const (
	OnFailureStop     = "stop"
	OnFailureContinue = "continue"
)

var stepName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// DefaultMaxSteps stops a jump loop that would otherwise run forever.
const DefaultMaxSteps = 100

// Step is one node of the graph.
type Step struct {
	Name   string `json:"name"`
	Title  string `json:"title,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	// Backend overrides the pipeline's default model for this step.
	Backend *config.Backend `json:"backend,omitempty"`
	// Tools are the workspace tools the step may use (see KnownTools).
	Tools []string `json:"tools,omitempty"`
	// Next is the NextStepJump target after a completed step; "" stops.
	Next string `json:"next,omitempty"`
	// Destinations are where the model may jump_to_step or call_step from
	// here (the StepJumpController's valid destinations).
	Destinations  []string `json:"destinations,omitempty"`
	MaxIterations int      `json:"max_iterations,omitempty"`
	// OnFailure: "stop" (default), "continue" (as if completed) or a step
	// to go to when this step fails, errors or runs out of iterations.
	OnFailure string `json:"on_failure,omitempty"`
	// Kind is KindAgent (one model, the default) or KindCoordination:
	// several agents, the Team, decide the step in a Coordination session.
	Kind string         `json:"kind,omitempty"`
	Team *config.Config `json:"team,omitempty"`
}

// Step kinds.
const (
	KindAgent        = "agent"
	KindCoordination = "coordination"
)

// Graph is a whole pipeline. Steps keep their declared order, which is
// also the order of result listings.
type Graph struct {
	Start    string `json:"start"`
	Steps    []Step `json:"steps"`
	MaxSteps int    `json:"max_steps,omitempty"` // 0: DefaultMaxSteps
}

// Step returns the step named name.
func (g Graph) Step(name string) (Step, bool) {
	for _, s := range g.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return Step{}, false
}

// For is the part of the graph a step runs with: that step alone (its
// prompt, tools, destinations), under the same start and max_steps. Every
// step's input carries its graph into the workflow history, so a whole
// graph there would grow the history by the pipeline's size on every step.
func (g Graph) For(step string) Graph {
	s, ok := g.Step(step)
	if !ok {
		return g
	}
	return Graph{Start: g.Start, MaxSteps: g.MaxSteps, Steps: []Step{s}}
}

// MaxStepsOf is the number of steps a run of g may take (max_steps, or
// DefaultMaxSteps).
func (g Graph) MaxStepsOf() int { return g.maxSteps() }

func (g Graph) maxSteps() int {
	if g.MaxSteps > 0 {
		return g.MaxSteps
	}
	return DefaultMaxSteps
}

// Allowed reports whether from may jump or call to to.
func (g Graph) Allowed(from, to string) bool {
	s, ok := g.Step(from)
	if !ok {
		return false
	}
	for _, d := range s.Destinations {
		if d == to {
			return true
		}
	}
	return false
}

// Validate rejects a graph that cannot run as written, naming every
// offending step at once, before anything runs.
func (g Graph) Validate() error {
	var errs []error
	if len(g.Steps) == 0 {
		return errors.New("pipeline has no steps")
	}
	seen := map[string]bool{}
	for i, s := range g.Steps {
		switch {
		case strings.TrimSpace(s.Name) == "":
			errs = append(errs, fmt.Errorf("steps[%d] has no name", i))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("step %q is declared twice", s.Name))
		case !stepName.MatchString(s.Name):
			errs = append(errs, fmt.Errorf("step %q: a name is 1-64 letters, digits, '_', '-' and '.', starting with a letter or digit (it names the step's storage folder)", s.Name))
		}
		seen[s.Name] = true
		switch s.Kind {
		case "", KindAgent:
		case KindCoordination:
			if s.Team == nil {
				errs = append(errs, fmt.Errorf("step %q: kind coordination needs a team config", s.Name))
			}
		default:
			errs = append(errs, fmt.Errorf("step %q: kind %q must be agent or coordination", s.Name, s.Kind))
		}
		if s.MaxIterations < 0 {
			errs = append(errs, fmt.Errorf("step %q: max_iterations %d is negative", s.Name, s.MaxIterations))
		}
	}
	ref := func(from, what, to string) {
		if to != "" && !seen[to] {
			errs = append(errs, fmt.Errorf("step %q: %s %q is not a step", from, what, to))
		}
	}
	if !seen[g.Start] {
		errs = append(errs, fmt.Errorf("start step %q is not a step", g.Start))
	}
	for _, s := range g.Steps {
		ref(s.Name, "next", s.Next)
		for _, d := range s.Destinations {
			ref(s.Name, "destination", d)
		}
		if s.OnFailure != "" && s.OnFailure != OnFailureStop && s.OnFailure != OnFailureContinue {
			ref(s.Name, "on_failure", s.OnFailure)
		}
	}
	if seen[g.Start] {
		if lost := g.unreachable(); len(lost) > 0 {
			errs = append(errs, fmt.Errorf("steps not reachable from start %q: %s", g.Start, strings.Join(lost, ", ")))
		}
	}
	if g.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("max_steps %d is negative", g.MaxSteps))
	}
	return errors.Join(errs...)
}

// unreachable lists the steps no path from start reaches, sorted.
func (g Graph) unreachable() []string {
	reached := map[string]bool{g.Start: true}
	queue := []string{g.Start}
	for len(queue) > 0 {
		s, _ := g.Step(queue[0])
		queue = queue[1:]
		next := append([]string{s.Next, s.OnFailure}, s.Destinations...)
		for _, n := range next {
			if _, ok := g.Step(n); ok && !reached[n] {
				reached[n] = true
				queue = append(queue, n)
			}
		}
	}
	var lost []string
	for _, s := range g.Steps {
		if !reached[s.Name] {
			lost = append(lost, s.Name)
		}
	}
	sort.Strings(lost)
	return lost
}
