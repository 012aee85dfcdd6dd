package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
)

// SessionPlan is what a session's first activity (InitSession) settles from
// the inputs once, so that its result in history is all the workflow reads
// of the config: a replay never applies defaults or validates again.
type SessionPlan struct {
	// Agents are the agent ids in configuration order.
	Agents  []string      `json:"agents"`
	Rules   coord.Rules   `json:"rules"`
	Timeout time.Duration `json:"timeout"`
	// Mode is the coordination mode recorded in session.json.
	Mode string `json:"mode"`
}

// PrepareSession applies the config defaults to in and checks it,
// returning the session's plan, or an error naming every problem (the
// caller makes it a non-retryable ErrTypeInvalidInput), so a user of
// `temporal workflow start` sees why the session did not start. The CLI
// runs the same checks before it starts a workflow.
func PrepareSession(in *InitSessionInput) (SessionPlan, error) {
	var problems []string
	if strings.TrimSpace(in.Task) == "" {
		problems = append(problems, `task: required; say what the agents should do, e.g. {"task": "Write a haiku about durable execution"}`)
	}
	in.Config.ApplyDefaults()
	if err := in.Config.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			problems = append(problems, "config."+line)
		}
	}
	if n := len(in.EvalCriteria); n > config.MaxCriteria {
		problems = append(problems, fmt.Sprintf("eval_criteria: %d criteria, at most %d are allowed", n, config.MaxCriteria))
	}
	problems = append(problems, sizeProblems(in)...)
	if !ValidSessionID(in.SessionID) {
		problems = append(problems, fmt.Sprintf("session_id: %q cannot name a storage folder; %s", in.SessionID, SessionIDRule))
	}
	if len(problems) > 0 {
		return SessionPlan{}, fmt.Errorf("invalid coordination input: %s", strings.Join(problems, "; "))
	}
	o := in.Config.Orchestrator
	return SessionPlan{Agents: in.Config.AgentIDs(), Rules: o.Rules(), Timeout: o.Timeout(), Mode: string(o.CoordinationMode)}, nil
}

// sizeProblems names the inputs above the contract's limits: a larger task
// or team would make the start input, InitSession's input or the status
// snapshots too large for Temporal (docs/temporal.md, "Limits").
func sizeProblems(in *InitSessionInput) []string {
	var problems []string
	if n := len(in.Task); n > MaxTaskBytes {
		problems = append(problems, fmt.Sprintf("task: %d bytes, at most %d (%.1f MiB) are allowed; put large material in files the agents read, or shorten it",
			n, MaxTaskBytes, float64(MaxTaskBytes)/(1<<20)))
	}
	if n := len(in.Config.Agents); n > MaxAgents {
		problems = append(problems, fmt.Sprintf("config.agents: %d agents, at most %d are allowed", n, MaxAgents))
	}
	cfg, err := json.Marshal(in.Config)
	crit, _ := json.Marshal(in.EvalCriteria)
	if err == nil && len(cfg)+len(crit) > MaxConfigBytes {
		problems = append(problems, fmt.Sprintf("config and eval_criteria: %d bytes of JSON, at most %d are allowed; shorten the system messages or criteria",
			len(cfg)+len(crit), MaxConfigBytes))
	}
	return problems
}
