// Package workflows holds Conclave's Temporal workflow code: deterministic,
// no I/O, only the pure engine packages. It is checked by workflowcheck.
package workflows
