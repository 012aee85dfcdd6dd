package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Prior is a checkpoint found in storage for the step about to run. Run
// resumes it when it may, and otherwise keeps a copy of it next to Key and
// starts the step fresh.
type Prior struct {
	Store Store
	Key   string
	Data  []byte
}

// ErrOtherInputs is the reason for not resuming a checkpoint written for
// other inputs than the step's (see Config.Binding).
var ErrOtherInputs = errors.New("it belongs to an attempt with other inputs (task, answers shown, criteria, mode or launch)")

// UnusableKey is where a copy of a checkpoint that is not resumed is kept
// for inspection: next to it, named by a hash of its content, so a retry
// that meets the same bytes keeps one copy, not one per attempt.
func UnusableKey(key string, data []byte) string {
	sum := sha256.Sum256(data)
	return key + ".unusable-" + hex.EncodeToString(sum[:6])
}

// resume is the one rule for a stored checkpoint, for every policy: it is
// resumed only when it parses, holds a conversation, was written for these
// inputs (cfg.Binding) and its policy state passes the policy's Check — a
// recorded outcome must pass the rules it was made under. Anything else
// (damaged, hand-edited, an older format, other inputs) is not resumed: a
// copy is kept at UnusableKey, the reason goes to cfg.Logf, and the step
// starts fresh.
//
// Starting fresh pays again for the model calls the checkpoint held, which
// is bounded (one step's calls) and visible in the warning. The
// alternative — failing until a person repairs or deletes the file — stops
// the step, and with it the session or pipeline run, for a file nobody may
// be watching; no retry could ever succeed, since the file does not
// change. Trusting it instead would store an action nobody made.
//
// The only error is a failure to keep the copy (storage trouble, retried).
func resume[S any](ctx context.Context, cfg *Config[S], p Policy[S]) (*Transcript[S], error) {
	pr := cfg.Prior
	t, why := ParseTranscript[S](pr.Data)
	switch {
	case why != nil:
		why = fmt.Errorf("it is damaged: %w", why)
	case len(t.Messages) == 0:
		why = errors.New("it is damaged: it holds no conversation")
	case t.Binding != cfg.Binding && t.Binding == "":
		why = errors.New("it was written by an older version, without the fingerprint of its inputs")
	case t.Binding != cfg.Binding:
		why = ErrOtherInputs
	default:
		if err := p.Check(t); err != nil {
			why = fmt.Errorf("it cannot be trusted: %w", err)
		}
	}
	if why == nil {
		return t, nil
	}
	kept := UnusableKey(pr.Key, pr.Data)
	if err := pr.Store.Put(ctx, kept, pr.Data); err != nil {
		return nil, fmt.Errorf("keep the unusable checkpoint %s as %s: %w", pr.Key, kept, err)
	}
	if cfg.Logf != nil {
		cfg.Logf("the stored checkpoint %s cannot be resumed: %v; starting the step fresh (its model calls are paid again), the checkpoint is kept as %s", pr.Key, why, kept)
	}
	return nil, nil
}
