package round

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/engine/agent"
	"github.com/conclave-ai/conclave/engine/coord"
)

// Untrusted text (the task, which may carry earlier steps' output, peers'
// answers, criteria, human input) goes through agent.Quote, so it cannot
// forge the markers below.
//
// The context follows MassGen's format so that a model sees what it would
// see there: the task in ORIGINAL MESSAGE tags, answers in CURRENT ANSWERS
// tags under anonymous labels, and a binary decision to make.

const votingSystem = `You are evaluating answers from multiple agents for the final response to a message. Different agents may have different tools and capabilities.
Does the best CURRENT ANSWER address the ORIGINAL MESSAGE well?
If YES, use the ` + "`vote`" + ` tool to record your vote for the agent whose answer is best (your own answers are listed anonymously among them) and do not call ` + "`new_answer`" + `.
Otherwise, digest the existing answers, combine their strengths, do additional work to address their weaknesses, then use the ` + "`new_answer`" + ` tool to record a better answer to the ORIGINAL MESSAGE.
Always finish by calling exactly one of these tools.`

const voteOnlySystem = `You are evaluating answers from multiple agents for the final response to a message.
You can no longer submit new answers. Use the ` + "`vote`" + ` tool to record your vote for the agent whose CURRENT ANSWER best addresses the ORIGINAL MESSAGE.`

const decompositionSystem = `You are one of several agents who each own a part of a larger task. Work on YOUR SUBTASK, taking the other agents' current work into account.
When your part has improved, record it with the ` + "`new_answer`" + ` tool. When your part is finished (or you are blocked), call the ` + "`stop`" + ` tool with a summary and status complete or blocked.
Always finish by calling exactly one of these tools.`

// The presentation's briefs (seed 001, "Completion and Final Answer Path"
// and "Ensemble Pattern"): the presenter is told which answer won and how
// to use it, or, in decomposition, that it assembles the parts.
const (
	presentWinner = `The agents voted, and your answer %s was selected as the best answer to the ORIGINAL MESSAGE.
Present it as the final answer: restate it completely and on its own, improving its presentation but not changing what it says. The other CURRENT ANSWERS are shown for reference only; do not present them instead.
Record the final answer with the ` + "`new_answer`" + ` tool.`
	presentSynthesizeWinner = `The agents voted, and your answer %s was selected as the best answer to the ORIGINAL MESSAGE.
Use it as the primary basis of the final answer and incorporate the strongest elements of the other CURRENT ANSWERS where they improve it.
Record the final answer with the ` + "`new_answer`" + ` tool.`
	presentSynthesizeNeutral = `Synthesize the strongest parts across all CURRENT ANSWERS into one final answer to the ORIGINAL MESSAGE. No answer was chosen by a vote: weigh them on their merits.
Record the final answer with the ` + "`new_answer`" + ` tool.`
	presentDecomposition = `The agents have each worked on their own part of the ORIGINAL MESSAGE; you assemble the final answer from their parts.
Combine every agent's current work (the CURRENT ANSWERS) into one complete, consistent answer, filling any gap between the parts.
Record the final answer with the ` + "`new_answer`" + ` tool.`
)

// presentLead opens every presentation brief; clients (and the offline
// demo model) recognise the presentation by it.
const presentLead = "You were chosen to present the final answer to the ORIGINAL MESSAGE.\n"

func presentSystem(in *Input) string {
	return presentLead + presentBrief(in)
}

func presentBrief(in *Input) string {
	switch {
	case in.Decomposition:
		return presentDecomposition
	case !in.Voted || in.Winner == "":
		// skip_voting, quick synthesize, a stall: nobody chose an answer,
		// whatever the strategy.
		return presentSynthesizeNeutral
	case in.Synthesize:
		return fmt.Sprintf(presentSynthesizeWinner, in.Winner)
	}
	return fmt.Sprintf(presentWinner, in.Winner)
}

func systemMessage(in *Input) string {
	var b strings.Builder
	if s := strings.TrimSpace(in.SystemMessage); s != "" {
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	switch in.Mode {
	case coord.ModeVoteOnly:
		b.WriteString(voteOnlySystem)
	case coord.ModeDecomposition:
		b.WriteString(decompositionSystem)
	case coord.ModePresent:
		b.WriteString(presentSystem(in))
	default:
		b.WriteString(votingSystem)
	}
	if in.Workspace != nil {
		b.WriteString("\n\nYou have a workspace for files: use list_files, read_file and write_file with paths relative to it. " +
			"Files delivered with other answers are readable under peers/<agent>/ (for example peers/agent2/). " +
			"Files you write are delivered with your next answer.")
	}
	return b.String()
}

func userMessage(in *Input) string {
	var b strings.Builder
	b.WriteString("<ORIGINAL MESSAGE>\n")
	b.WriteString(agent.Quote(in.Task))
	b.WriteString("\n<END OF ORIGINAL MESSAGE>\n\n")
	if in.Mode == coord.ModeDecomposition && in.Subtask != "" {
		fmt.Fprintf(&b, "<YOUR SUBTASK>\n%s\n<END OF YOUR SUBTASK>\n\n", agent.Quote(in.Subtask))
	}
	b.WriteString(AnswersBlock(in.Answers))
	if len(in.EvalCriteria) > 0 {
		b.WriteString("\n<EVALUATION CRITERIA>\n")
		for _, c := range in.EvalCriteria {
			fmt.Fprintf(&b, "- %s\n", agent.Quote(c))
		}
		b.WriteString("<END OF EVALUATION CRITERIA>\n")
	}
	if len(in.Human) > 0 {
		b.WriteString("\nInput from the user during this session:\n")
		for _, h := range in.Human {
			fmt.Fprintf(&b, "- %s\n", agent.Quote(h))
		}
	}
	if len(in.Tally) > 0 {
		b.WriteString("\nThe previous vote was split: ")
		b.WriteString(formatTally(in.Tally))
		b.WriteString(". Vote again for the answer you find best; a clear majority ends the discussion.\n")
	}
	if in.Mode == coord.ModePresent && in.Voted && in.Winner != "" && !in.Decomposition {
		fmt.Fprintf(&b, "\nThe selected answer is %s.\n", in.Winner)
	}
	return b.String()
}

// AnswersBlock is the CURRENT ANSWERS section of MassGen's context, answers
// quoted under their labels; every policy that shows answers (coordination,
// the round evaluator) builds it here, so the format has one definition.
func AnswersBlock(answers []Answer) string {
	if len(answers) == 0 {
		return "<CURRENT ANSWERS from the agents>\n(no answers available yet)\n<END OF CURRENT ANSWERS>\n"
	}
	sorted := append([]Answer(nil), answers...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Label < sorted[j].Label })
	var b strings.Builder
	b.WriteString("<CURRENT ANSWERS from the agents>\n")
	for _, a := range sorted {
		fmt.Fprintf(&b, "<%s> %s <end of %s>\n", a.Label, agent.Quote(a.Text), a.Label)
	}
	b.WriteString("<END OF CURRENT ANSWERS>\n")
	return b.String()
}

func formatTally(t map[string]int) string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, t[k])
	}
	return strings.Join(parts, ", ")
}

// updateMessage is seed 003's update, injected at a safe point: the new
// revisions under their labels (with the label change, agent1.1 ->
// agent1.2), the workspace note when the agent has a workspace, and the
// choices the agent has now; human input, a non-peer payload, rides along
// (or comes alone).
func updateMessage(in *Input, old map[string]Answer, fresh []Answer, human []string) string {
	var b strings.Builder
	b.WriteString("<UPDATE>\n")
	if len(fresh) > 0 {
		b.WriteString("UPDATE: While you were working, new answers were provided.\n\n<NEW ANSWERS>\n")
		for _, a := range fresh {
			anon := anonOf(a.Label)
			if prev, ok := old[anon]; ok {
				fmt.Fprintf(&b, "%s -> %s\n", prev.Label, a.Label)
			} else {
				fmt.Fprintf(&b, "new: %s\n", a.Label)
			}
		}
		for _, a := range fresh {
			fmt.Fprintf(&b, "<%s> %s <end of %s>\n", a.Label, agent.Quote(a.Text), a.Label)
		}
		b.WriteString("</NEW ANSWERS>\n")
		if in.Workspace != nil {
			b.WriteString("\nWORKSPACE UPDATE:\n- Your workspace files are preserved.\n" +
				"- Files delivered with the new answers are readable under peers/<agent>/ (for example peers/" + anonOf(fresh[0].Label) + "/).\n")
		}
	} else {
		b.WriteString("UPDATE: The user sent input while you were working.\n")
	}
	if len(human) > 0 {
		b.WriteString("\nInput from the user:\n")
		for _, h := range human {
			fmt.Fprintf(&b, "- %s\n", agent.Quote(h))
		}
	}
	if len(fresh) > 0 {
		b.WriteString("\nYou can now:\n1. Continue your current approach if you think it's better or different\n" +
			"2. Build upon or refine the new answers\n")
		switch in.Mode {
		case coord.ModeDecomposition:
			b.WriteString("3. Stop, if your part is complete given the new answers\n\n" +
				"Proceed with your decision (continue working, call stop, or provide new_answer). Votes and stops refer to the latest answers.\n")
		default:
			b.WriteString("3. Vote for an existing answer if you agree with it\n\n" +
				"Proceed with your decision (continue working, vote, or provide new_answer). Votes refer to the latest answers.\n")
		}
	} else {
		b.WriteString("\nTake it into account before you finish.\n")
	}
	b.WriteString("<END OF UPDATE>")
	return b.String()
}

// wrapUpMessage is the soft round timeout's guidance.
// allowed are the tools that still run past the hard timeout; elapsed is
// the step's time so far, so a step resumed late is not promised a grace
// that is already over.
func wrapUpMessage(in *Input, allowed []string, elapsed time.Duration) string {
	msg := fmt.Sprintf("TIME CHECK: the time for this round is up. Do not start new work: finish now by calling a workflow tool (%s) with what you have.", strings.Join(allowed, ", "))
	if left := in.RoundTimeout + in.RoundTimeoutGrace - elapsed; left > 0 {
		msg += fmt.Sprintf(" In %s only these tools will be allowed; other tool calls will be refused.", left.Round(time.Second))
	} else {
		msg += " From now on other tool calls are refused."
	}
	return msg
}

// anonOf turns a label (agent2.3) into its anonymous id (agent2).
func anonOf(label string) string {
	if i := strings.IndexByte(label, '.'); i >= 0 {
		return label[:i]
	}
	return label
}
