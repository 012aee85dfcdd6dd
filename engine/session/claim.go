package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/storage"
)

// ClaimFile is claim.json, step mode's lock on a step folder: a run of
// `conclave step` creates it exclusively (S3 conditional create, O_EXCL
// locally) before it calls the model and removes it when it ends, so two
// runs of one agent at once never share a folder (one would overwrite the
// other's answer, or leave an answer and a vote side by side). Temporal
// steps commit launch.json instead (Commit); a session's owner is
// owner.json (Claim).
type ClaimFile struct {
	// Token is the run's own random id: it releases only its own claim.
	Token     string `json:"token"`
	Host      string `json:"host,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Timestamp string `json:"timestamp"`
}

// ErrClaimed is wrapped by ClaimStep when another run holds the folder.
var ErrClaimed = errors.New("the step folder is claimed by another run")

// ClaimKey is where a step folder's claim.json lives.
func ClaimKey(agent string, step int) string { return StepPrefix(agent, step) + claimFile }

// ClaimStep takes the step folder for one run and returns its token. Another
// run's claim fails with an error wrapping ErrClaimed that says who holds
// it and what to do.
func ClaimStep(ctx context.Context, st storage.Store, agent string, step int, now time.Time) (string, error) {
	if err := CheckAgentID(agent); err != nil {
		return "", err
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	f := ClaimFile{Token: hex.EncodeToString(b[:]), Host: host, PID: os.Getpid(), Timestamp: Timestamp(now)}
	data, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	key := ClaimKey(agent, step)
	err = st.Create(ctx, key, append(data, '\n'))
	if err == nil {
		// A run that read the session before another stored this step
		// would otherwise take the folder as soon as that run let go.
		if done, err := hasAction(ctx, st, agent, step); err != nil || done {
			_ = st.Delete(ctx, key)
			if err != nil {
				return "", fmt.Errorf("claim %s: %w", key, err)
			}
			return "", fmt.Errorf("%w: step %d of %s was stored by another run meanwhile; run again for the next step", ErrClaimed, step, agent)
		}
		return f.Token, nil
	}
	if !errors.Is(err, storage.ErrExists) {
		return "", fmt.Errorf("claim %s: %w", key, err)
	}
	var have ClaimFile
	holder := "another run"
	if ReadJSON(ctx, st, key, &have) == nil {
		holder = fmt.Sprintf("the run started %s on host %q (pid %d)", have.Timestamp, have.Host, have.PID)
	}
	return "", fmt.Errorf("%w: %s: step %d of %s is being run by %s; run one step of an agent at a time and wait for it to end, "+
		"or, if no step of %s is running any more (it was killed), remove that file and run again", ErrClaimed, key, step, agent, holder, agent)
}

// CheckStepClaim reports whether token still holds the folder, before a run
// writes its outputs.
func CheckStepClaim(ctx context.Context, st storage.Store, agent string, step int, token string) error {
	var have ClaimFile
	if err := ReadJSON(ctx, st, ClaimKey(agent, step), &have); err != nil {
		return fmt.Errorf("%w: the claim on step %d of %s is gone (%v); nothing was stored, run the step again", ErrClaimed, step, agent, err)
	}
	if have.Token != token {
		return fmt.Errorf("%w: step %d of %s was claimed by another run meanwhile; nothing was stored", ErrClaimed, step, agent)
	}
	return nil
}

// ReleaseStep removes the run's own claim. It runs as the run ends, also when
// its context was cancelled, so it uses a short context of its own.
func ReleaseStep(st storage.Store, agent string, step int, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := CheckStepClaim(ctx, st, agent, step, token); err != nil {
		return nil // not ours (any more): leave it
	}
	return st.Delete(ctx, ClaimKey(agent, step))
}

// hasAction reports whether the step folder holds an action file.
func hasAction(ctx context.Context, st storage.Store, agent string, step int) (bool, error) {
	keys, err := st.List(ctx, StepPrefix(agent, step))
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		switch strings.TrimPrefix(k, StepPrefix(agent, step)) {
		case answerFile, voteFile, stopFile:
			return true, nil
		}
	}
	return false, nil
}
