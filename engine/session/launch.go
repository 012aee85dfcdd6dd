package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/conclave-ai/conclave/engine/storage"
)

// LaunchFile is launch.json, the commit marker of a Temporal step folder
// (agents/<id>/<NNN>/launch.json). It is created exclusively, once, by
// whichever comes first: the step's launch, just before it writes anything
// but its checkpoint ({"launch": "7"}), or the workflow fencing that launch
// off before it abandons it ({"launch": "7", "fenced": true, "reason":
// "restart"}). The first writer decides the folder for good: a step writes
// its workspace, action file and last_action.json only under its own
// commit, so a fenced or superseded launch never writes them, and a
// launch that has committed is never abandoned. Step mode writes none.
type LaunchFile struct {
	// Launch is the launch that committed, or the one that was fenced.
	Launch string `json:"launch"`
	Fenced bool   `json:"fenced,omitempty"`
	// Reason says why the folder was fenced (restart, timeout, cancelled,
	// or the error a step ended with).
	Reason string `json:"reason,omitempty"`
	// Ended says how a fenced step ended without an action (Ended*:
	// given up when empty), so that replaying the session drops an agent
	// exactly when the workflow did.
	Ended string `json:"ended,omitempty"`
	// Attempts counts the failed attempts of a step mode step that may be
	// tried again (EndedRetry).
	Attempts  int    `json:"attempts,omitempty"`
	Timestamp string `json:"timestamp"`
}

// ErrSuperseded is wrapped by Commit and CheckLaunch when the step folder
// is not the launch's to write: the workflow fenced it off, or another
// launch of the same step number holds it.
var ErrSuperseded = errors.New("this launch of the step was superseded")

// LaunchKey is where a step folder's launch.json lives.
func LaunchKey(agent string, step int) string { return StepPrefix(agent, step) + launchFile }

// Commit makes the step folder launch's before the step writes its
// outputs: it creates launch.json, or finds launch's own commit (a retry
// of the same launch). A fence or another launch's commit fails with an
// error wrapping ErrSuperseded; the step must then write nothing.
func Commit(ctx context.Context, st storage.Store, agent string, step int, launch string, now time.Time) error {
	if launch == "" {
		return fmt.Errorf("commit %s step %d: no launch given", agent, step)
	}
	created, have, err := createLaunch(ctx, st, agent, step, LaunchFile{Launch: launch, Timestamp: Timestamp(now)})
	if err != nil || created {
		return err
	}
	return own(agent, step, launch, have)
}

// CheckLaunch reports, without writing, whether launch may still write the
// step folder: nil when launch.json is absent or launch's own commit, an
// error wrapping ErrSuperseded when it is a fence or another launch's.
func CheckLaunch(ctx context.Context, st storage.Store, agent string, step int, launch string) error {
	var have LaunchFile
	var bad *badFileError
	switch err := ReadJSON(ctx, st, LaunchKey(agent, step), &have); {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case errors.As(err, &bad):
		have = LaunchFile{Fenced: true, Reason: LaunchKey(agent, step) + " is damaged (" + err.Error() + ")"}
	case err != nil:
		return fmt.Errorf("read %s: %w", LaunchKey(agent, step), err)
	}
	return own(agent, step, launch, &have)
}

// Fence closes the step folder to launch before the workflow abandons it.
// It returns committed = true when launch had committed already: the step
// is then writing, or has written, its outputs and must be let finish.
// Otherwise launch can never write the folder: the fence is created now,
// or was before (a retried fence), or another launch holds the folder.
//
// ended is how the step ended (EndedTurn, EndedRefused, EndedFailed), or
// "" for a launch the workflow gives up.
func Fence(ctx context.Context, st storage.Store, agent string, step int, launch, reason, ended string, now time.Time) (committed bool, err error) {
	if launch == "" {
		return false, fmt.Errorf("fence %s step %d: no launch given", agent, step)
	}
	created, have, err := createLaunch(ctx, st, agent, step,
		LaunchFile{Launch: launch, Fenced: true, Reason: reason, Ended: ended, Timestamp: Timestamp(now)})
	if err != nil || created {
		return false, err
	}
	return !have.Fenced && have.Launch == launch, nil
}

// createLaunch creates launch.json as f, or reads the one that exists.
func createLaunch(ctx context.Context, st storage.Store, agent string, step int, f LaunchFile) (created bool, have *LaunchFile, err error) {
	if err := CheckAgentID(agent); err != nil {
		return false, nil, err
	}
	if step <= 0 {
		return false, nil, fmt.Errorf("%s step %d: a step folder is numbered from 1", agent, step)
	}
	key := LaunchKey(agent, step)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return false, nil, fmt.Errorf("encode %s: %w", key, err)
	}
	err = st.Create(ctx, key, append(data, '\n'))
	if err == nil {
		return true, nil, nil
	}
	if !errors.Is(err, storage.ErrExists) {
		return false, nil, fmt.Errorf("create %s: %w", key, err)
	}
	have = &LaunchFile{}
	var bad *badFileError
	switch err := ReadJSON(ctx, st, key, have); {
	case errors.As(err, &bad):
		// Nobody can own a damaged marker: the folder stays closed.
		return false, &LaunchFile{Fenced: true, Reason: key + " is damaged (" + err.Error() + ")"}, nil
	case err != nil:
		return false, nil, fmt.Errorf("read %s: %w", key, err)
	}
	return false, have, nil
}

// own is nil when have is launch's commit, else says whose folder it is.
func own(agent string, step int, launch string, have *LaunchFile) error {
	switch {
	case have.Fenced:
		return fmt.Errorf("%w: %s step %d (launch %s) was fenced off by the workflow (%s); it writes nothing, and the agent goes on with its next step",
			ErrSuperseded, agent, step, launch, have.Reason)
	case have.Launch != launch:
		return fmt.Errorf("%w: %s step %d belongs to launch %s, not to launch %s; this launch writes nothing",
			ErrSuperseded, agent, step, have.Launch, launch)
	}
	return nil
}

// EndStep records, in step mode, how a step that ended without an action
// ended: its launch.json is fenced with ended (Ended*), counting one more
// failed attempt. Step mode has no workflow to fence the folder, and it is
// the step's own (one writer per step folder).
func EndStep(ctx context.Context, st storage.Store, agent string, step int, reason, ended string, now time.Time) error {
	var have LaunchFile
	_ = ReadJSON(ctx, st, LaunchKey(agent, step), &have) // a damaged or missing one starts the count again
	return WriteJSON(ctx, st, LaunchKey(agent, step), LaunchFile{Fenced: true, Reason: reason, Ended: ended,
		Attempts: have.Attempts + 1, Timestamp: Timestamp(now)})
}

// Reopen lets step mode try a step again that ended with EndedRetry: its
// launch.json keeps the attempts so far and no longer closes the folder,
// which shows as a step in progress again. Any other folder is left as is.
func Reopen(ctx context.Context, st storage.Store, agent string, step int, now time.Time) error {
	var have LaunchFile
	if err := ReadJSON(ctx, st, LaunchKey(agent, step), &have); err != nil || !have.Fenced || have.Ended != EndedRetry {
		return nil
	}
	return WriteJSON(ctx, st, LaunchKey(agent, step), LaunchFile{Attempts: have.Attempts, Timestamp: Timestamp(now)})
}
