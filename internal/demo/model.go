// Package demo is the built-in offline model of `make demo`: a scripted
// OpenAI-compatible server whose agents answer, compare answers and vote
// like a small team would, so the whole system (Temporal, storage, the real
// openai-go client) runs where no model endpoint is reachable.
package demo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/conclave-ai/conclave/internal/llmtest"
)

// NewServer returns an unstarted demo model server.
func NewServer() *llmtest.Server {
	return llmtest.NewServer(llmtest.Func(reply))
}

var (
	taskRe   = regexp.MustCompile(`(?s)<ORIGINAL MESSAGE>\n(.*?)\n<END OF ORIGINAL MESSAGE>`)
	answerRe = regexp.MustCompile(`(?s)<(agent\d+)\.(\d+)> (.*?) <end of agent\d+\.\d+>`)
)

// styles give each demo agent (by model name) its own angle on the task.
var styles = map[string]string{
	"demo-analyst": "Breaking the question down step by step",
	"demo-critic":  "Looking first at what could go wrong",
	"demo-writer":  "Aiming for the clearest possible explanation",
}

func reply(r llmtest.Request) llmtest.Reply {
	if rep, ok := pipelineReply(r); ok {
		return rep
	}
	text := ""
	for _, m := range r.Messages {
		text += m.Content + "\n"
	}
	task := "the task"
	if m := taskRe.FindStringSubmatch(text); m != nil {
		task = strings.TrimSpace(m[1])
	}
	answers := latestAnswers(text)
	if rep, ok := gatesReply(r, text, answers, latestLabels(text)); ok {
		return rep
	}
	switch {
	case !r.HasTool("vote") && len(answers) > 0 && strings.Contains(r.Messages[0].Content, "present the final answer"):
		best := bestAnswer(answers)
		return call("new_answer", map[string]string{"content": "Final answer (after the agents compared their work):\n\n" + answers[best]})
	case r.HasTool("vote") && len(answers) > 0:
		best := bestAnswer(answers)
		return call("vote", map[string]string{"agent_id": best, "reason": fmt.Sprintf("%s gives the most complete answer.", best)})
	default:
		style := styles[r.Model]
		if style == "" {
			style = "Answering directly"
		}
		rep, res := toolReply(r, task)
		if res != nil {
			return call("new_answer", map[string]string{"content": withToolResult(style, task, res)})
		}
		if len(rep.ToolCalls) > 0 {
			return rep
		}
		return call("new_answer", map[string]string{"content": fmt.Sprintf(
			"%s: %s — a short answer would cover the goal, the key facts and one concrete next step. (offline demo model, %d words in the prompt)",
			style, task, len(strings.Fields(text)))})
	}
}

// latestAnswers maps anonymous ids to their newest answer text.
func latestAnswers(text string) map[string]string {
	out := map[string]string{}
	for _, m := range answerRe.FindAllStringSubmatch(text, -1) {
		out[m[1]] = m[3]
	}
	return out
}

// latestLabels are the labels of the newest answers (agent1.2, …), sorted.
func latestLabels(text string) []string {
	rev := map[string]string{}
	for _, m := range answerRe.FindAllStringSubmatch(text, -1) {
		rev[m[1]] = m[1] + "." + m[2]
	}
	out := make([]string, 0, len(rev))
	for _, l := range rev {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// bestAnswer picks the longest answer (ties: lowest id), so every demo agent
// reaches the same verdict and the session ends in consensus.
func bestAnswer(answers map[string]string) string {
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	best := ids[0]
	for _, id := range ids[1:] {
		if len(answers[id]) > len(answers[best]) {
			best = id
		}
	}
	return best
}

func call(name string, args map[string]string) llmtest.Reply {
	data, _ := json.Marshal(args)
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_demo", Name: name, Arguments: string(data)}}}
}
