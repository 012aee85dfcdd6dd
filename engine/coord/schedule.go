package coord

// launchReady launches every step the schedule allows now, and the round
// evaluator when gated steps wait for it.
func (m *Machine) launchReady() []Decision {
	s := &m.State
	plans := m.plan()
	plans, eval := m.holdForEvaluation(plans)
	if len(plans) > 0 || !AnyRunning(s.Ledger) {
		// A re-vote launches all its agents at once (none runs at a split);
		// those that cannot step (failed, out of steps) keep their vote.
		s.Revote = nil
	}
	var out []Decision
	for _, p := range plans {
		a := s.Ledger.Find(p.Agent)
		p.Step = NextStep(*a)
		p.Visible = m.visible(*a, p.Mode)
		p.Evaluation = m.evaluation()
		p.Launch = m.start(a, p.Step, p.Mode)
		out = append(out, p)
	}
	if eval != nil {
		s.Launches++
		eval.Launch = s.Launches
		s.Eval.Running = eval
		out = append(out, *eval)
	}
	return out
}

// plan decides which agents start a step now. A re-vote launches the
// agents owed one, vote-only and shown the tally; otherwise Relaunch
// decides — agents with no action, answered agents, stale voters and
// stale stoppers, minus running and failed ones and those that used up
// max_steps_per_agent — under seed 001's pre-start gates: a
// decomposition agent at a limit stops automatically (AutoStop), an agent
// at the fairness lead cap waits while a slower peer can catch up
// (Paused). Without a vote round only agents without an answer step.
func (m *Machine) plan() []Launch {
	l, r := m.State.Ledger, m.Rules
	if r.Rounds && AnyRunning(l) {
		return nil
	}
	if r.Verdict.SkipVoting {
		return m.planNoVote()
	}
	lim := r.Limits
	var plans []Launch
	if len(m.State.Revote) > 0 {
		for _, id := range m.State.Revote {
			if a := l.Find(id); a != nil && !a.Failed && !a.Running && !StepsExhausted(*a, lim) {
				plans = append(plans, Launch{Agent: id, Mode: ModeVoteOnly, Tally: m.State.RevoteTally})
			}
		}
		return plans
	}
	decomposition := r.Verdict.Decomposition
	for _, id := range Relaunch(l) {
		if StepsExhausted(*l.Find(id), lim) {
			continue
		}
		if decomposition {
			if why := AutoStop(l, id, lim); why != "" {
				plans = append(plans, Launch{Agent: id, Mode: ModeDecomposition, AutoStop: why})
				continue
			}
		}
		if Paused(l, id, lim, decomposition) {
			continue // a slower peer is catching up
		}
		mode, ok := NextMode(l, id, decomposition, lim)
		if !ok || (mode == ModeVoteOnly && r.DeferVoting && awaitingFirstAnswers(l, id, lim)) {
			continue // nothing to vote for yet, or peers still owe first answers
		}
		plans = append(plans, Launch{Agent: id, Mode: mode})
	}
	return plans
}

// planNoVote is plan without a vote round: only alive agents without an
// answer step, for their first answer. An agent that may not answer (the
// global cap is reached) or has used up max_steps_per_agent is not
// launched to vote instead: once nothing runs, the session is decided as
// a stall, by the presenter, with the answers there are.
func (m *Machine) planNoVote() []Launch {
	l, lim := m.State.Ledger, m.Rules.Limits
	mode := ModeVoting
	if m.Rules.Verdict.Decomposition {
		mode = ModeDecomposition
	}
	var plans []Launch
	for _, id := range RelaunchFor(l, VerdictOptions{SkipVoting: true}) {
		if StepsExhausted(*l.Find(id), lim) {
			continue
		}
		if ok, _ := CanAnswer(l, id, lim); !ok {
			continue
		}
		plans = append(plans, Launch{Agent: id, Mode: mode})
	}
	return plans
}

// awaitingFirstAnswers is defer_voting_until_all_answered's gate for a capped
// agent: some alive peer may still give its first answer (it is running, or
// has not acted yet), and the global cap does not already forbid that answer.
// A peer that voted without answering no longer holds anyone back, so the
// gate cannot deadlock.
func awaitingFirstAnswers(l Ledger, self string, lim Limits) bool {
	if m := lim.MaxNewAnswersGlobal; m != nil && TotalAnswers(l) >= *m {
		return false
	}
	for _, p := range l.Agents {
		if p.ID != self && !p.Failed && p.AnswerCount == 0 && (p.Running || p.LastAction == ActionNone) {
			return true
		}
	}
	return false
}

// visible is what a step launched now is shown (agent → step of its latest
// answer), decided at launch so that when the step happens to start, or how
// often it is retried, changes nothing. An agent that may still give its
// first answer is shown nothing (first-answer protection: first answers
// are independent), except in decomposition, where the agents own different
// parts and work taking each other's into account (shown nothing, an agent
// could never stop with the others' work covered). Otherwise every agent's
// latest answer is shown, failed agents' included.
func (m *Machine) visible(a Agent, mode Mode) map[string]int {
	if a.AnswerCount == 0 && mode != ModeVoteOnly && mode != ModeDecomposition {
		return map[string]int{}
	}
	return LatestSeen(m.State.Ledger)
}

// holdForEvaluation returns the plans that may launch now, and the round
// evaluation to start, if any. With the managed round evaluator, a gated
// step of an agent that has answered (round 2+) waits for the end of the
// round — every alive agent has its first answer and no step runs — and
// then, when the answers changed since the last evaluation, for the
// evaluator: rounds are barriers, as its "one blocking run before round
// 2+" asks. First answers and vote-only steps never wait.
func (m *Machine) holdForEvaluation(plans []Launch) ([]Launch, *Evaluate) {
	s := &m.State
	if !m.Rules.ManagedEvaluator {
		return plans, nil
	}
	latest := LatestSeen(s.Ledger)
	current := s.Eval.Running == nil && sameAnswers(s.Ledger, latest, s.Eval.Visible)
	var now []Launch
	held := false
	for _, p := range plans {
		a := s.Ledger.Find(p.Agent)
		if current || a.AnswerCount == 0 || (p.Mode != ModeVoting && p.Mode != ModeDecomposition) {
			now = append(now, p)
			continue
		}
		held = true
	}
	if held && s.Eval.Running == nil && len(s.Running) == 0 && !firstAnswersPending(s.Ledger) {
		return now, &Evaluate{Round: max(s.Eval.Round, 1) + 1, Visible: latest, Evaluator: Presenter(s.Ledger, "")}
	}
	return now, nil
}

// firstAnswersPending: some alive agent is still on its first answer, so
// round 1 is not over and there is nothing whole to evaluate yet.
func firstAnswersPending(l Ledger) bool {
	for _, a := range l.Agents {
		if !a.Failed && a.AnswerCount == 0 && (a.Running || a.LastAction == ActionNone) {
			return true
		}
	}
	return false
}

// sameAnswers compares two answer sets by lookups in ledger order (never
// map order: workflow code calls it).
func sameAnswers(l Ledger, a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for _, ag := range l.Agents {
		if a[ag.ID] != b[ag.ID] {
			return false
		}
	}
	return true
}

// evaluation is the round evaluation a step launched now works from.
func (m *Machine) evaluation() int {
	e := m.State.Eval
	if !m.Rules.ManagedEvaluator || !e.OK || !sameAnswers(m.State.Ledger, LatestSeen(m.State.Ledger), e.Visible) {
		return 0
	}
	return e.Round
}
