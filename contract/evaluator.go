package contract

import "github.com/conclave-ai/conclave/engine/coord"

// NameRoundEvaluator is the activity of seed 001's round evaluator: one
// blocking run before round 2+, launched by the workflow when
// orchestrator_managed_round_evaluator is on.
const NameRoundEvaluator = "RoundEvaluator"

// RoundEvaluatorInput asks for the evaluation before Round. Visible fixes
// the answers it reads (agent → step of the latest shown), decided by the
// workflow when it launches the evaluator.
type RoundEvaluatorInput struct {
	SessionID string `json:"session_id"`
	SessionRef
	InputsHash string         `json:"inputs_hash"`
	Round      int            `json:"round"`
	Visible    map[string]int `json:"visible"`
	// Evaluator is the agent whose backend runs the evaluation.
	Evaluator string `json:"evaluator"`
	Launch    int    `json:"launch"`
}

// RoundEvaluatorResult says where the packet and the plan are, and whether
// the next round can work from the plan (else the degraded path).
type RoundEvaluatorResult struct {
	Round      int         `json:"round"`
	PacketKey  string      `json:"packet_key"`
	TasksKey   string      `json:"tasks_key,omitempty"`
	TasksValid bool        `json:"tasks_valid"`
	TasksError string      `json:"tasks_error,omitempty"`
	Usage      coord.Usage `json:"usage"`
}
