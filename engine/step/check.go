package step

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// CheckSession makes sure a session can be read and that agent's folder can
// be written, before a step pays for any model call: a step that could not
// store its action would be paid for and lost. Both failures wrap
// ErrBadInput (step mode exits 1). It reads the snapshot and writes, then
// deletes, a small probe file in agents/<agent>/, which session listings
// ignore.
func CheckSession(ctx context.Context, st storage.Store, agent string) error {
	if err := session.CheckAgentID(agent); err != nil {
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	if _, err := session.Load(ctx, st); err != nil {
		return fmt.Errorf("%w: the session at %s cannot be read: %v; check the path and its permissions", ErrBadInput, st.Location(), err)
	}
	switch owner, err := session.ReadOwner(ctx, st); {
	case err == nil && owner.WorkflowID == "":
		return fmt.Errorf("%w: the session at %s has an %s that names no workflow; a step-mode session has none — remove it, or start the session in another directory", ErrBadInput, st.Location(), session.OwnerKey)
	case err == nil:
		// The workflow schedules that session's steps, fences them and
		// decides it; a step written beside them (even after it ended)
		// would change what the stored session says was decided.
		return fmt.Errorf("%w: the session at %s belongs to the Coordination workflow %q (%s): step mode does not write into it; "+
			"follow it with `conclave status %s`, or start a step-mode session in another directory", ErrBadInput, st.Location(), owner.WorkflowID, session.OwnerKey, owner.WorkflowID)
	case !errors.Is(err, storage.ErrNotFound):
		return fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	probe := session.AgentsPrefix + agent + "/.conclave-write-probe-" + rand.Text()
	if err := st.Put(ctx, probe, []byte("probe\n")); err != nil {
		return fmt.Errorf("%w: the session at %s cannot be written (agent %s's folder): %v; check its permissions and free space", ErrBadInput, st.Location(), agent, err)
	}
	if err := st.Delete(ctx, probe); err != nil {
		return fmt.Errorf("%w: the session at %s lets files be written but not deleted (%s): %v", ErrBadInput, st.Location(), probe, err)
	}
	return nil
}
