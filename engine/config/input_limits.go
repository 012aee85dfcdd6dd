package config

// Limits on what a config may hold. MaxAgents and MaxConfigJSONBytes are the
// workflow's own start limits (contract re-exports them; docs/temporal.md,
// "Limits"): the CLI checks them when it reads a file so a config that no
// session could start with fails `conclave validate` too.
const (
	// MaxConfigFileBytes bounds a config file. A config within the
	// workflow's limits is far smaller; the bound stops a wrong path
	// (/dev/zero, a log file) from being read into memory.
	MaxConfigFileBytes = 1 << 20
	// MaxConfigJSONBytes bounds the JSON of the config and evaluation
	// criteria together in a workflow input.
	MaxConfigJSONBytes = 256 << 10
	// MaxAgents bounds the team: every status snapshot, status.json write
	// and continue-as-new carries one ledger entry per agent. A session of
	// 200 agents measured 0.4-1.1 MiB of history (docs/temporal.md).
	MaxAgents = 200
)
