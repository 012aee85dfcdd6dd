package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/conclave-ai/conclave/engine/llm"
	"github.com/conclave-ai/conclave/engine/tools"
)

// CallRecord is the engine's record of one Toolbox call of the reply being
// answered, kept in the transcript's state line: a call is recorded as
// started before it runs and with its result once it returns, and both are
// checkpointed. A resumed step answers a completed call from its record and
// runs a started one again at most once (MaxCallAttempts). Records go once
// the reply's answers are in the conversation.
type CallRecord struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	Key      string        `json:"key"`
	Attempts int           `json:"attempts"`
	Result   *tools.Result `json:"result,omitempty"`
	Millis   int64         `json:"ms,omitempty"`
}

// MaxCallAttempts is how often one tool call may start: once, and once more
// if the worker died while it ran.
const MaxCallAttempts = 2

// CallKey is a call's idempotency key: a hash of the step's scope (session,
// agent, step and launch: Config.CallScope), the reply's position in the
// conversation and the call's id, so it is the same when the call runs
// again after a crash and differs for any other call.
func CallKey(scope string, message int, callID string) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s", scope, message, callID))
	return hex.EncodeToString(sum[:16])
}

// ToolStats is what a step reports of its Toolbox calls, per tool name.
type ToolStats struct {
	Calls  int   `json:"calls"`
	Errors int   `json:"errors,omitempty"`
	Millis int64 `json:"ms,omitempty"`
}

// durableCall returns the Toolbox runner for the reply at message index
// msg: it answers from the records, and records, checkpoints and runs
// calls that have not completed.
func (r *run[S]) durableCall(msg int) func(ctx context.Context, c llm.ToolCall) tools.Result {
	return func(ctx context.Context, c llm.ToolCall) tools.Result {
		rec := r.t.record(c)
		if rec.Result != nil {
			return *rec.Result // completed before the worker stopped: never repeated
		}
		if rec.Attempts >= MaxCallAttempts {
			res := tools.Result{IsError: true, Content: fmt.Sprintf(
				"%s was interrupted %d times (the worker stopped while it ran) and was not run again; "+
					"its effects, if any, are unknown. Check its outcome with another call before you rely on it.", c.Name, rec.Attempts)}
			rec.Result = &res
			return res
		}
		rec.Name, rec.Key = c.Name, CallKey(r.cfg.CallScope, msg, c.ID)
		rec.Attempts++
		if err := r.checkpoint(ctx); err != nil {
			// Not recorded as started: it does not run.
			return tools.Result{IsError: true, Content: fmt.Sprintf("%s was not run: the step could not record it (%v); try again", c.Name, err)}
		}
		start := time.Now()
		res := r.cfg.Files.Tools.Call(ctx, Call{Name: c.Name, Arguments: c.Arguments, Key: rec.Key})
		if ctx.Err() != nil {
			// Cancelled or fenced: the call stays started, not completed.
			return res
		}
		// Capped here already, so that the checkpoint holds no more than
		// the model will see.
		res = tools.Cap(res, tools.MaxResultBytes)
		rec.Result, rec.Millis = &res, time.Since(start).Milliseconds()
		r.t.tally(c.Name, res.IsError, rec.Millis)
		// Stored before the next call or model call: a crash from here on
		// never repeats this one. A failed store is the next checkpoint's.
		_ = r.checkpoint(ctx)
		return res
	}
}

// record finds or adds the record of call c.
func (t *Transcript[S]) record(c llm.ToolCall) *CallRecord {
	for i := range t.Calls {
		if t.Calls[i].ID == c.ID {
			return &t.Calls[i]
		}
	}
	t.Calls = append(t.Calls, CallRecord{ID: c.ID, Name: c.Name})
	return &t.Calls[len(t.Calls)-1]
}

func (t *Transcript[S]) tally(name string, failed bool, ms int64) {
	if t.Tools == nil {
		t.Tools = map[string]ToolStats{}
	}
	s := t.Tools[name]
	s.Calls++
	s.Millis += ms
	if failed {
		s.Errors++
	}
	t.Tools[name] = s
}
