package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// wrongStorageRetry is how soon an attempt refused for the wrong storage is
// retried: soon, so that a worker with the right storage picks it up.
const wrongStorageRetry = time.Second

// InitSession creates the session. With an owner (every workflow since
// sessions have owners) session.json is created exclusively, recording the
// owner and the hash of the inputs, and config.json and eval_criteria.json
// are stored for the steps to load: a session that exists already is
// refused unless it is this owner's (a retry, or a reset of the owner),
// and nothing stored changes. Without an owner (histories recorded before)
// it writes the files as it always did.
func (a *Activities) InitSession(ctx context.Context, in contract.InitSessionInput) (contract.InitSessionResult, error) {
	st, err := a.session(in.SessionID)
	if err != nil {
		return contract.InitSessionResult{}, err
	}
	created, err := time.Parse(time.RFC3339, in.CreatedAt)
	if err != nil {
		created = a.now()
	}
	info := session.Info{Task: in.Task, Agents: in.Agents, Mode: in.Mode, CreatedAt: created.UTC()}
	if in.Owner == nil || in.Config == nil {
		return a.initUnowned(ctx, st, info, in.EvalCriteria)
	}
	enc, err := session.EncodeInputs(in.Task, in.Config, in.EvalCriteria)
	if err != nil {
		return contract.InitSessionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, err)
	}
	owner := session.Owner(*in.Owner)
	info.Owner, info.InputsHash = &owner, enc.Hash
	err = session.Create(ctx, st, info)
	if errors.Is(err, storage.ErrExists) {
		err = a.reclaim(ctx, st, in.SessionID, *in.Owner, enc.Hash)
	}
	if err != nil {
		return contract.InitSessionResult{}, err
	}
	if err := enc.Write(ctx, st); err != nil {
		return contract.InitSessionResult{}, err
	}
	return contract.InitSessionResult{Location: st.Location(), InputsHash: enc.Hash}, nil
}

// reclaim decides about a session that exists already: the owner's own
// (an attempt whose first write landed, or a reset of the owner to before
// InitSession) goes on; any other is refused for good.
func (a *Activities) reclaim(ctx context.Context, st storage.Store, id string, owner contract.Owner, hash string) error {
	info, err := session.ReadInfo(ctx, st)
	if err != nil {
		return err // raced with a delete, or storage trouble: retried
	}
	switch {
	case info.Owner == nil:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"session %q already exists in %s without an owner (made by step mode or an earlier version) and is not %s's; "+
				"start with another session_id (or workflow id); nothing was changed", id, st.Location(), owner.WorkflowID),
			contract.ErrTypeSessionOwned, nil)
	case contract.Owner(*info.Owner) != owner:
		return ownedError(id, st.Location(), contract.Owner(*info.Owner), owner)
	case info.InputsHash != hash:
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"session %q in %s was created by this workflow with other inputs (%s, now %s); it cannot go on with these",
			id, st.Location(), info.InputsHash, hash), contract.ErrTypeConfig, nil)
	}
	return nil
}

// ownedError refuses a caller that is not the session's owner.
func ownedError(id, location string, owner, caller contract.Owner) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"session %q in %s belongs to %s, not to %s: a session belongs to one workflow; "+
			"start with another session_id (or workflow id); nothing was changed",
		id, location, owner, caller), contract.ErrTypeSessionOwned, nil)
}

// initUnowned is InitSession as recorded before sessions had owners.
func (a *Activities) initUnowned(ctx context.Context, st storage.Store, info session.Info, criteria []string) (contract.InitSessionResult, error) {
	if err := session.WriteJSON(ctx, st, session.InfoKey, info); err != nil {
		return contract.InitSessionResult{}, err
	}
	if len(criteria) > 0 {
		if err := session.WriteJSON(ctx, st, session.EvalCriteriaKey, criteria); err != nil {
			return contract.InitSessionResult{}, err
		}
	}
	return contract.InitSessionResult{Location: st.Location()}, nil
}

// owned opens a session for a write and checks it against ref: this
// worker's store must hold the session at ref.Location (else the attempt
// is refused retryably, for a worker that does hold it), and the session
// must belong to ref.Owner (else it is refused for good). It returns
// session.json, or nil for inputs recorded before sessions had owners.
func (a *Activities) owned(ctx context.Context, id string, ref contract.SessionRef) (storage.Store, *session.Info, error) {
	st, err := a.session(id)
	if err != nil {
		return nil, nil, err
	}
	if ref.Location == "" && ref.Owner == nil {
		return st, nil, nil
	}
	if ref.Location != "" && st.Location() != ref.Location {
		return nil, nil, a.wrongStorage(ctx, id, fmt.Sprintf(
			"this worker's storage puts session %q at %s, but the session was created at %s", id, st.Location(), ref.Location))
	}
	info, err := session.ReadInfo(ctx, st)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, a.wrongStorage(ctx, id, fmt.Sprintf(
			"session %q was created at %s, but this worker's storage has no %s at %s", id, ref.Location, session.InfoKey, st.Location()))
	}
	if err != nil {
		return nil, nil, err
	}
	if ref.Owner != nil {
		if info.Owner == nil || *info.Owner != session.Owner(*ref.Owner) {
			owner := contract.Owner{WorkflowID: "(none: made by step mode or an earlier version)"}
			if info.Owner != nil {
				owner = contract.Owner(*info.Owner)
			}
			return nil, nil, ownedError(id, st.Location(), owner, *ref.Owner)
		}
	}
	return st, info, nil
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

// inputs returns what a step runs on: the stored inputs when the input
// carries their hash, else the inline ones of histories recorded before.
func inputs(ctx context.Context, st storage.Store, info *session.Info, hash, task string, cfg config.Config, criteria []string) (*session.Inputs, error) {
	if hash == "" {
		// Never nil: the workflow's criteria are the step's, none included.
		return &session.Inputs{Task: task, Config: cfg, Criteria: append([]string{}, criteria...)}, nil
	}
	if info == nil {
		return nil, temporal.NewNonRetryableApplicationError(
			"inputs by reference need the session's owner and location; the workflow sent neither", contract.ErrTypeConfig, nil)
	}
	in, err := session.LoadInputs(ctx, st, info, hash)
	if errors.Is(err, session.ErrInputsChanged) {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), contract.ErrTypeConfig, err)
	}
	return in, err
}

// ownerName is step.Options.Owner: "" for inputs without an owner.
func ownerName(o *contract.Owner) string {
	if o == nil {
		return ""
	}
	return o.String()
}
