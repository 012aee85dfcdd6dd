package step

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/session"
	"github.com/conclave-ai/conclave/engine/storage"
)

// Team settles who the session's agents are, for step mode: anonymous
// labels (agent1..agentN, agents sorted by id) must come from the team,
// never from which agents happen to have files yet, or three parallel
// first steps would each be agent1. The team is session.json's; when the
// session has none, given (`conclave step --agents`) is recorded there —
// created exclusively, so parallel first steps agree on one file — and
// when neither exists known is false. given must name the same agents as
// session.json, and self must be one of them.
func Team(ctx context.Context, st storage.Store, self string, given []string, task, mode string, now time.Time) (team []string, known bool, err error) {
	given = sortedUnique(given)
	for _, id := range given {
		if err := session.CheckAgentID(id); err != nil {
			return nil, false, fmt.Errorf("%w: --agents: %v", ErrBadInput, err)
		}
	}
	for attempt := 0; attempt < 2; attempt++ {
		var info session.Info
		err := session.ReadJSON(ctx, st, session.InfoKey, &info)
		switch {
		case err == nil && len(info.Agents) > 0:
			have := sortedUnique(info.Agents)
			if len(given) > 0 && !slices.Equal(given, have) {
				return nil, false, fmt.Errorf("%w: --agents %s disagrees with the team in %s (%s); pass the session's team or none",
					ErrBadInput, strings.Join(given, ","), session.InfoKey, strings.Join(have, ","))
			}
			if !slices.Contains(have, self) {
				return nil, false, fmt.Errorf("%w: agent %s is not in the session's team (%s in %s)", ErrBadInput, self, strings.Join(have, ","), session.InfoKey)
			}
			return have, true, nil
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return nil, false, fmt.Errorf("%w: read %s: %v", ErrBadInput, session.InfoKey, err)
		}
		if len(given) == 0 {
			return nil, false, nil
		}
		if !slices.Contains(given, self) {
			return nil, false, fmt.Errorf("%w: --agents %s does not include this step's agent %s", ErrBadInput, strings.Join(given, ","), self)
		}
		data, err := json.MarshalIndent(session.Info{Task: task, Agents: given, Mode: mode, CreatedAt: now.UTC()}, "", "  ")
		if err != nil {
			return nil, false, err
		}
		err = st.Create(ctx, session.InfoKey, append(data, '\n'))
		if err == nil {
			return given, true, nil
		}
		if !errors.Is(err, storage.ErrExists) {
			return nil, false, fmt.Errorf("write %s: %w", session.InfoKey, err)
		}
		// Another first step wrote it meanwhile: check against that one.
	}
	return nil, false, fmt.Errorf("%w: %s keeps changing; try again", ErrBadInput, session.InfoKey)
}

func sortedUnique(ids []string) []string {
	out := slices.Clone(ids)
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.Sort(out)
	return slices.Compact(out)
}
