package round

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func TestWordOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"", "anything", 0},
		{"...!", "anything", 0},
		{"The Beatles", "the beatles were a band", 1},
		{"The Beatles, from Liverpool!", "THE BEATLES", 0.5},
		{"a a a b", "a", 0.5}, // distinct words
		{"one two three four", "five six", 0},
		{"Ringo Starr", "ringo\tstarr.", 1},
	}
	for _, c := range cases {
		require.InDelta(t, c.want, WordOverlap(c.a, c.b), 1e-9, "%q vs %q", c.a, c.b)
	}
}

// answer_novelty_requirement: balanced refuses an answer repeating more
// than 70% of its words from one in context, naming it; lenient takes it.
func TestNoveltyRequirement(t *testing.T) {
	known := Answer{Agent: "agent_b", Label: "agent2.1", Step: 1, Text: "the beatles were a band from liverpool england"}
	reword := `{"content":"The Beatles were a band from Liverpool, England, formed 1960."}` // 8 of 10 words (80%)
	better := `{"content":"The Beatles: John, Paul, George and Ringo, whose albums changed pop music."}`
	for _, c := range []struct {
		name       string
		maxOverlap float64
		refused    bool
	}{{"lenient", 0, false}, {"balanced", 0.7, true}, {"strict", 0.5, true}} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.Start(t, llmtest.Call("new_answer", reword).Once(), llmtest.Call("new_answer", better))
			in := input(t, srv, "agent_a", known)
			in.MaxOverlap = c.maxOverlap
			out, err := Run(context.Background(), in)
			require.NoError(t, err)
			require.Equal(t, coord.ActionNewAnswer, out.Action)
			if !c.refused {
				require.Contains(t, out.Answer, "formed 1960")
				return
			}
			require.Contains(t, out.Answer, "Ringo")
			require.Equal(t, []string{ReasonNotNovel}, out.Transcript.State.Reasons)
			require.Contains(t, srv.Requests()[1].Last().Content, "this answer repeats agent2.1: 80% of its words")
		})
	}
}
