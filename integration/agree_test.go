//go:build integration

package integration

import (
	"context"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// agreeAtCleanup checks, when the test ends, every session a workflow
// finished under st: replaying its stored steps through the state machine
// (what `session status` and step mode do) reaches the verdict the
// workflow wrote in status.json — the phase, the winner, how it was
// decided, and each agent's state. Timeouts and cancellations are left
// out: only the workflow knows of them.
func agreeAtCleanup(t *testing.T, st storage.Store) {
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := st.List(ctx, "")
		if err != nil {
			t.Logf("sessions not checked against their replay: %v", err) // a test that stopped its store
			return
		}
		for _, key := range keys {
			if path.Base(key) != session.StatusKey {
				continue
			}
			prefix := strings.TrimSuffix(strings.TrimSuffix(key, session.StatusKey), "/")
			sess := st
			if prefix != "" {
				sess = storage.Sub(st, prefix)
			}
			var want coord.Status
			require.NoError(t, session.ReadJSON(ctx, sess, session.StatusKey, &want))
			if want.Phase != coord.PhaseDone && want.Phase != coord.PhaseFailed {
				continue
			}
			var cfg config.Config
			if err := session.ReadJSON(ctx, sess, session.ConfigKey, &cfg); errors.Is(err, storage.ErrNotFound) {
				continue // not a workflow's session
			} else {
				require.NoError(t, err, key)
			}
			snap, err := session.Load(ctx, sess)
			require.NoError(t, err, key)
			got := snap.Replay(cfg.Orchestrator.Rules(), true).Advise()
			assert.Equal(t, want.Phase, got.Phase, "%s: phase", prefix)
			assert.Equal(t, want.Winner, got.Winner, "%s: winner", prefix)
			assert.Equal(t, want.DecidedBy, got.DecidedBy, "%s: decided_by", prefix)
			for id, as := range want.Agents {
				assert.Equal(t, as.State, got.Agents[id].State, "%s: %s's state", prefix, id)
				assert.Equal(t, as.AnswerCount, got.Agents[id].AnswerCount, "%s: %s's answers", prefix, id)
			}
		}
	})
}
