package activities

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// wrongStorageRetry is how soon an attempt refused for the wrong storage is
// retried: soon, so that a worker with the right storage picks it up.
const wrongStorageRetry = time.Second

// InitSession creates the session. It applies the config's defaults and
// validates the inputs (contract.PrepareSession: its plan, in history, is
// what the workflow runs by), creates owner.json exclusively, recording
// the owner and the hash of the inputs, then writes session.json and
// stores config.json and eval_criteria.json for the steps to load. A
// session that exists already is refused unless it is this owner's (a
// retry, or a reset of the owner), and nothing stored changes.
func (a *Activities) InitSession(ctx context.Context, in contract.InitSessionInput) (contract.InitSessionResult, error) {
	plan, err := contract.PrepareSession(&in)
	if err != nil {
		return contract.InitSessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeInvalidInput, nil)
	}
	st, err := a.session(in.SessionID)
	if err != nil {
		return contract.InitSessionResult{}, err
	}
	created, err := time.Parse(time.RFC3339, in.CreatedAt)
	if err != nil {
		created = a.now()
	}
	info := session.Info{Task: in.Task, Agents: sortedIDs(plan.Agents), Mode: plan.Mode, CreatedAt: created.UTC()}
	if err := a.checkTools(&in.Config); err != nil {
		return contract.InitSessionResult{}, err // before anything is stored
	}
	enc, err := session.EncodeInputs(in.Task, &in.Config, in.EvalCriteria)
	if err != nil {
		return contract.InitSessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, err)
	}
	rec := session.OwnerFile{WorkflowID: in.Owner.WorkflowID, FirstRunID: in.Owner.FirstRunID, InputsHash: enc.Hash}
	if err := a.claim(ctx, st, sessionFolder, in.SessionID, rec); err != nil {
		return contract.InitSessionResult{}, err
	}
	if err := session.WriteJSON(ctx, st, session.InfoKey, info); err != nil {
		return contract.InitSessionResult{}, err
	}
	if err := enc.Write(ctx, st); err != nil {
		return contract.InitSessionResult{}, err
	}
	return contract.InitSessionResult{Location: st.Location(), InputsHash: enc.Hash, Plan: plan}, nil
}

// folderKind is what an owned folder holds: a session, or a pipeline run.
// created is the file that exists once the folder was made, by an owner or
// before folders had owners.
type folderKind struct{ noun, created string }

var (
	sessionFolder  = folderKind{"session", session.InfoKey}
	pipelineFolder = folderKind{"pipeline run", session.PipelineDefKey}
)

// claim makes rec the folder's owner, or finds it is already: the owner's
// own attempt whose first write landed, or a reset of the owner to before
// its init, goes on; a folder of another owner, or one made without an
// owner (step mode, earlier versions), is refused for good.
func (a *Activities) claim(ctx context.Context, st storage.Store, kind folderKind, id string, rec session.OwnerFile) error {
	_, err := st.Get(ctx, kind.created)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		err = session.Claim(ctx, st, rec)
		if !errors.Is(err, storage.ErrExists) {
			return err // claimed, or storage trouble (retried)
		}
	case err != nil:
		return err
	}
	have, err := session.ReadOwner(ctx, st)
	if errors.Is(err, storage.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s %q already exists in %s without an owner (made by step mode or an earlier version) and is not %s's; "+
				"start with another id (session_id, --id or workflow id); nothing was changed", kind.noun, id, st.Location(), rec.WorkflowID),
			contract.ErrTypeSessionOwned, nil)
	}
	if err != nil {
		return err
	}
	caller := contract.Owner{WorkflowID: rec.WorkflowID, FirstRunID: rec.FirstRunID}
	if owner := ownerOf(have); owner != caller {
		return ownedError(kind, id, st.Location(), owner, caller)
	}
	if have.InputsHash != rec.InputsHash {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"%s %q in %s was created by this workflow with other inputs (%s, now %s); it cannot go on with these",
			kind.noun, id, st.Location(), have.InputsHash, rec.InputsHash), contract.ErrTypeConfig, nil)
	}
	return nil
}

func ownerOf(f *session.OwnerFile) contract.Owner {
	return contract.Owner{WorkflowID: f.WorkflowID, FirstRunID: f.FirstRunID}
}

// ownedError refuses a caller that is not the folder's owner.
func ownedError(kind folderKind, id, location string, owner, caller contract.Owner) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"%s %q in %s belongs to %s, not to %s: a %s belongs to one workflow; "+
			"start with another id (session_id, --id or workflow id); nothing was changed",
		kind.noun, id, location, owner, caller, kind.noun), contract.ErrTypeSessionOwned, nil)
}

func sortedIDs(ids []string) []string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// owned opens a session for a write and checks it against ref: this
// worker's store must hold the session at ref.Location (else the attempt
// is refused retryably, for a worker that does hold it), and the session
// must belong to ref.Owner (else it is refused for good). It returns
// owner.json.
func (a *Activities) owned(ctx context.Context, id string, ref contract.SessionRef) (storage.Store, *session.OwnerFile, error) {
	return a.ownedFolder(ctx, sessionFolder, id, ref)
}

// ownedFolder is owned for a session or a pipeline run.
func (a *Activities) ownedFolder(ctx context.Context, kind folderKind, id string, ref contract.SessionRef) (storage.Store, *session.OwnerFile, error) {
	st, err := a.session(id)
	if err != nil {
		return nil, nil, err
	}
	if ref.Owner == nil {
		return nil, nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s %q: the workflow sent no owner, so the write cannot be checked", kind.noun, id), contract.ErrTypeConfig, nil)
	}
	if ref.Location != "" && st.Location() != ref.Location {
		return nil, nil, a.wrongStorage(ctx, id, fmt.Sprintf(
			"this worker's storage puts %s %q at %s, but it was created at %s", kind.noun, id, st.Location(), ref.Location))
	}
	rec, err := session.ReadOwner(ctx, st)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, a.wrongStorage(ctx, id, fmt.Sprintf(
			"%s %q was created at %s, but this worker's storage has no %s at %s", kind.noun, id, ref.Location, session.OwnerKey, st.Location()))
	}
	if err != nil {
		return nil, nil, err
	}
	if ownerOf(rec) != *ref.Owner {
		return nil, nil, ownedError(kind, id, st.Location(), ownerOf(rec), *ref.Owner)
	}
	return st, rec, nil
}

// wrongStorage is the retryable refusal of a worker whose storage does not
// hold the session, logged so the misconfigured worker's log shows it.
func (a *Activities) wrongStorage(ctx context.Context, id, what string) error {
	msg := what + ": workers on one task queue must use the same storage (--storage); " +
		"this worker refused the attempt and Temporal retries it, so a worker with the session's storage can take it — fix or stop this worker"
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		activity.GetLogger(ctx).Error("refusing a session this worker's storage does not hold",
			"session", id, "activity", info.ActivityType.Name, "attempt", info.Attempt, "error", msg)
	}
	return temporal.NewApplicationErrorWithOptions(msg, contract.ErrTypeWrongStorage,
		temporal.ApplicationErrorOptions{NextRetryDelay: wrongStorageRetry})
}

// inputs returns what a step runs on: the inputs stored with the hash.
func inputs(ctx context.Context, st storage.Store, rec *session.OwnerFile, hash string) (*session.Inputs, error) {
	in, err := session.LoadInputs(ctx, st, rec.InputsHash, hash)
	if errors.Is(err, session.ErrInputsChanged) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, err)
	}
	return in, err
}

// ownerName is step.Options.Owner.
func ownerName(o *contract.Owner) string { return o.String() }
