// Package workflows holds Conclave's Temporal workflow code: deterministic,
// no I/O, only the pure engine packages. It is checked by workflowcheck.
//
// Coordination (registered as "Coordination", see Register) runs one
// multi-agent session. Clients use:
//
//   - input CoordinationInput: {"task", "config", "eval_criteria", "session_id"}
//   - result CoordinationResult: {"status", "winner", "final_answer", "session",
//     "votes", "usage", "keys"}; a session without an answer fails with an
//     ApplicationError (contract.ErrType*: InvalidInput, AllAgentsFailed, NoAnswers,
//     PresentFailed) after writing its final status
//   - query "status": coord.Status, the same shape as status.json
//   - update "human_input": HumanInput ({"text": "…"} or a bare string, at
//     most 8 KiB), returns the inbox sequence number
//   - cancellation: running steps are fenced (those that had committed
//     finish), the phase "cancelled" is recorded, every stored answer stays
//
// Activities are called by their registered names with the inputs and
// outputs of package contract (contract.Name*), so this package links
// neither the activities nor their S3 and model clients. Every one is a
// regular activity, status writes included: they show in the Web UI, retry
// durably, and tests mock them by name.
//
// The rules are engine/coord's state machine; Coordination only drives it.
// history_gen_test.go records testdata/*_history.json on a real dev
// server and TestReplay replays them: a change to workflow logic fails it
// and re-records them in the same commit. Sessions are pinned to the
// worker build that started them (Worker Versioning), so no GetVersion.
package workflows
