package coord

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// anonPrefix starts every anonymous id. Models see only these ids and the
// labels built on them, never real agent ids or backend names.
const anonPrefix = "agent"

// AnonymousIDs maps real agent ids to anonymous ids agent1..agentN. The ids
// are sorted first, so the mapping depends only on the set of agents and not
// on configuration order: every step of every agent, and a session reloaded
// later, agree on who "agent2" is. Duplicate ids are mapped once.
func AnonymousIDs(ids []string) map[string]string {
	sorted := sortedUnique(ids)
	m := make(map[string]string, len(sorted))
	for i, id := range sorted {
		m[id] = anonPrefix + strconv.Itoa(i+1)
	}
	return m
}

// RealIDs is the reverse lookup of AnonymousIDs: anonymous id → real id. It is
// how a vote for "agent2" becomes a vote for a real agent in vote.json.
func RealIDs(ids []string) map[string]string {
	sorted := sortedUnique(ids)
	m := make(map[string]string, len(sorted))
	for i, id := range sorted {
		m[anonPrefix+strconv.Itoa(i+1)] = id
	}
	return m
}

// Label names revision M (1-based) of an anonymous agent's answer, as models
// see it in their context: Label("agent2", 3) == "agent2.3".
func Label(anon string, revision int) string {
	return anon + "." + strconv.Itoa(revision)
}

// FinalLabel names the presented final answer of an anonymous agent:
// FinalLabel("agent2") == "agent2.final".
func FinalLabel(anon string) string {
	return anon + ".final"
}

// ParseTarget resolves what a model passed as a vote target to an anonymous
// id. It accepts an anonymous id ("agent2") or one of its answer labels
// ("agent2.3"), because models often copy the label they were shown; the
// revision is not checked against the answers, only that it is a positive
// number. Surrounding spaces and letter case are ignored. agents is the number
// of agents in the session, so the valid ids are agent1..agent<agents>.
// The error is meant for the model: it says what to pass instead.
func ParseTarget(s string, agents int) (string, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	id, rev, hasRev := strings.Cut(t, ".")
	n, ok := anonNumber(id)
	if ok && hasRev {
		r, err := strconv.Atoi(rev)
		ok = err == nil && r >= 1 && strconv.Itoa(r) == rev
	}
	if !ok || n > agents {
		if agents < 1 {
			return "", fmt.Errorf("vote target %q is unknown: there are no agents to vote for", s)
		}
		return "", fmt.Errorf("vote target %q is unknown: pass an agent id from agent1 to agent%d, "+
			"or an answer label such as agent1.1", s, agents)
	}
	return anonPrefix + strconv.Itoa(n), nil
}

// anonNumber parses "agentN" (N ≥ 1, no sign, no leading zeros).
func anonNumber(id string) (int, bool) {
	digits, ok := strings.CutPrefix(id, anonPrefix)
	if !ok || digits == "" || digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0, false
	}
	return n, true
}

// sortedUnique returns a sorted copy of ids without duplicates.
func sortedUnique(ids []string) []string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return slices.Compact(s)
}
