package step

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/round"
	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/engine/tools"
)

// inbox serves injections from the session's storage: peers' newer answers
// (with their workspaces) and human input files. Storage is the channel, so
// a peer's answer reaches a running agent even when the two run on different
// workers.
type inbox struct {
	prep *prep
	self string
	ws   *tools.Workspace
	// peers: peer answers are injected too; else only human input is
	// read, without loading the session.
	peers bool
}

func (b *inbox) Unseen(ctx context.Context, seen map[string]int, humanSeen int) (round.Update, error) {
	var u round.Update
	if !b.peers {
		var err error
		u.Human, err = readInbox(ctx, b.prep.store, humanSeen)
		return u, err
	}
	snap, err := session.Load(ctx, b.prep.store)
	if err != nil {
		return u, err
	}
	for i := range snap.Agents {
		a := &snap.Agents[i]
		if _, inTeam := b.prep.anon[a.ID]; !inTeam || a.ID == b.self || a.Latest() == nil || a.LatestAnswerStep <= seen[a.ID] {
			continue
		}
		ans, err := b.prep.answer(ctx, a, a.Latest(), b.ws)
		if err != nil {
			return u, err
		}
		u.Answers = append(u.Answers, ans)
	}
	u.Human, err = readInbox(ctx, b.prep.store, humanSeen)
	return u, err
}

// readInbox returns the human inputs after the first skip, in order.
func readInbox(ctx context.Context, st storage.Store, skip int) ([]string, error) {
	keys, err := st.List(ctx, session.InboxPrefix)
	if err != nil {
		return nil, fmt.Errorf("list the inbox: %w", err)
	}
	var out []string
	for i, k := range keys { // zero-padded names sort in arrival order
		if i < skip {
			continue
		}
		data, err := st.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", k, err)
		}
		var m session.InboxMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("read %s: %w", k, err)
		}
		out = append(out, m.Text)
	}
	return out, nil
}

// SessionCriteria reads the session's eval_criteria.json (nil when absent).
func SessionCriteria(ctx context.Context, st storage.Store) ([]string, error) {
	data, err := st.Get(ctx, session.EvalCriteriaKey)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", session.EvalCriteriaKey, err)
	}
	return config.ParseCriteria(data, session.EvalCriteriaKey)
}
