package pipeline

import "fmt"

// StepFolder is where step seq of a pipeline run keeps its files,
// steps/<seq>-<name>, relative to the run and without a trailing slash
// (engine/session names the files in it). The workflow assigns seq, so a
// retried step finds its own folder again; the workflow also names the
// folder of a coordination step before it runs, so the rule lives in this
// pure package that workflow code may import.
func StepFolder(seq int, name string) string {
	return fmt.Sprintf("steps/%03d-%s", seq, name)
}
