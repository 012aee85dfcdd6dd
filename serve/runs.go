package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/runes"
	"github.com/conclave-ai/conclave/workflows"
)

// memoKey holds a served run's runMemo: who started it, for which model,
// and the conversation it answers (for previous_response_id).
const memoKey = "conclave_serve"

type runMemo struct {
	Key          string    `json:"key"`
	Model        string    `json:"model"`
	Conversation []message `json:"conversation"`
}

// newRunID is a response id, also the workflow and session id. Its random
// part makes it unguessable, though ids are checked against the key anyway.
func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "resp-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// start starts a Coordination workflow for the conversation and returns
// once Temporal has recorded it: the run is durable from then on, whatever
// happens to the request or this process.
func (s *Server) start(ctx context.Context, c caller, model string, conv []message, maxTokens *int, tokensParam string) (*run, error) {
	id, err := s.startWorkflow(ctx, c, model, conv, maxTokens, tokensParam)
	if err != nil {
		return nil, err
	}
	return s.lookup(ctx, c, id)
}

func (s *Server) startWorkflow(ctx context.Context, c caller, model string, conv []message, maxTokens *int, tokensParam string) (string, error) {
	team, ok := s.teams[model]
	if !ok {
		return "", &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found", param: "model",
			msg: fmt.Sprintf("model %q does not exist on this server; GET /v1/models lists the teams it serves", echo(model))}
	}
	text, err := task(conv)
	if err != nil {
		return "", err
	}
	cfg, err := withMaxTokens(team.Config, maxTokens, tokensParam)
	if err != nil {
		return "", err
	}
	in := workflows.CoordinationInput{Task: text, Config: cfg}
	memo := runMemo{Key: c.key, Model: model, Conversation: conv}
	if err := s.checkStartSize(in, memo); err != nil {
		return "", err
	}
	id := newRunID()
	if err := s.acquire(c.key, id); err != nil {
		return "", err
	}
	summary := runes.Clip("serve "+model+": "+conv[len(conv)-1].Content, 120)
	opts := client.StartWorkflowOptions{
		ID: id, TaskQueue: s.opts.TaskQueue, StaticSummary: summary,
		StaticDetails:                            fmt.Sprintf("Conclave session started by conclave serve (model %s, key %q)", model, c.key),
		Memo:                                     map[string]any{memoKey: memo},
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}
	if s.opts.KeySearchAttribute && c.key != "" {
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(contract.SearchAttrServeKey).ValueSet(c.key))
	}
	// The client going away must not leave a start half done.
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := s.opts.Client.ExecuteWorkflow(startCtx, opts, contract.CoordinationName, in); err != nil {
		s.release(c.key, id)
		s.log.Warn("start failed", "key", c.key, "model", model, "error", err)
		if tooLargeForTemporal(err) {
			// Trying again cannot help: the same start is as large.
			return "", &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
				msg: fmt.Sprintf("Temporal refused the run as too large (each payload may be at most %s, the whole start %s); send a shorter conversation",
					mib(temporalPayloadLimit), mib(temporalMessageLimit))}
		}
		var invalid *serviceerror.InvalidArgument
		if errors.As(err, &invalid) {
			// Temporal's own limits (payload and memo sizes) are the request's fault.
			return "", badRequest("", "Temporal refused the run: %s; send a shorter conversation", invalid.Message)
		}
		return "", &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "start_failed",
			msg: "the run could not be started on Temporal; try again shortly (the operator's log has the cause)"}
	}
	s.log.Info("run started", "id", id, "key", c.key, "model", model, "messages", len(conv))
	s.log.Debug("run task", "id", id, "task", text)
	go s.watch(c.key, id)
	return id, nil
}

// Temporal's limits on a start, as its server has them by default: each
// payload (the input; the memo) at most 2 MiB, the whole gRPC message at
// most 4 MiB. The margins leave room for the rest of the request.
const (
	temporalPayloadLimit = 2 << 20
	temporalMessageLimit = 4 << 20
	maxStartPayloadBytes = temporalPayloadLimit - 16<<10
	maxStartBytes        = temporalMessageLimit - 64<<10
)

func mib(n int) string { return fmt.Sprintf("%d MiB", n>>20) }

// checkStartSize measures the start as it goes to Temporal: the input and
// the memo both carry the conversation, encoded (JSON escapes '<' and '>'
// as six bytes; a payload codec may add more), so a body under the request
// limit can still be too large. It is refused here, before anything starts.
func (s *Server) checkStartSize(in workflows.CoordinationInput, memo runMemo) error {
	input, err := s.dc.ToPayloads(in)
	if err != nil {
		return serverError("encode the run's input: " + err.Error())
	}
	m, err := s.dc.ToPayload(memo)
	if err != nil {
		return serverError("encode the run's memo: " + err.Error())
	}
	inBytes, memoBytes := proto.Size(input), proto.Size(m)
	if inBytes <= maxStartPayloadBytes && memoBytes <= maxStartPayloadBytes && inBytes+memoBytes <= maxStartBytes {
		return nil
	}
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
		msg: fmt.Sprintf("the conversation is too large once encoded for Temporal: the run's input is %d bytes and its memo %d bytes "+
			"(each carries the conversation), over the limit of %d bytes each and %d together; send a shorter conversation",
			inBytes, memoBytes, maxStartPayloadBytes, maxStartBytes)}
}

// tooLargeForTemporal tells Temporal's refusal of a start for its size (a
// payload over the blob limit, a gRPC message over its maximum).
func tooLargeForTemporal(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "larger than max") || strings.Contains(msg, "blob data size exceeds") ||
		strings.Contains(msg, "memo size exceeds")
}

// acquire counts a run against its key's cap and the server's.
func (s *Server) acquire(key, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for _, ids := range s.running {
		total += len(ids)
	}
	if total >= s.opts.MaxRuns {
		return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "server_busy",
			msg: fmt.Sprintf("the server runs %d sessions, its limit; try again when one has ended", total)}
	}
	if n := len(s.running[key]); n >= s.opts.MaxRunsPerKey {
		return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_exceeded", code: "rate_limit_exceeded",
			msg: fmt.Sprintf("this API key has %d runs in progress, its limit; wait for one to end (or cancel one) and try again", n)}
	}
	if s.running[key] == nil {
		s.running[key] = map[string]bool{}
	}
	s.running[key][id] = true
	return nil
}

// follow takes one of the key's slots for a request that holds its
// connection open while a run goes on; the caller calls the release.
func (s *Server) follow(key string) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.streams[key]; n >= s.opts.MaxStreamsPerKey {
		return nil, &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_exceeded", code: "rate_limit_exceeded",
			msg: fmt.Sprintf("this API key has %d streams or waiting requests open, its limit; close one, or use background runs and poll", n)}
	}
	s.streams[key]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.streams[key]--
	}, nil
}

func (s *Server) release(key, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running[key], id)
}

// watch releases a run's place under the cap once the workflow has ended.
func (s *Server) watch(key, id string) {
	for s.ctx.Err() == nil {
		err := s.opts.Client.GetWorkflow(s.ctx, id, "").Get(s.ctx, nil)
		var nf *serviceerror.NotFound
		if s.ctx.Err() != nil {
			return
		}
		if err == nil || !isTransient(err) || errors.As(err, &nf) {
			s.release(key, id)
			return
		}
		select {
		case <-s.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// isTransient tells a lost connection to Temporal (wait and ask again)
// from the end of the run.
func isTransient(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}

// recoverRunning counts the served runs still in progress, from Temporal.
func (s *Server) recoverRunning(ctx context.Context) error {
	var token []byte
	for {
		resp, err := s.opts.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query:         fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = \"Running\"", contract.CoordinationName),
			NextPageToken: token,
		})
		if err != nil {
			return fmt.Errorf("serve: list the runs in progress on Temporal: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			m, ok := s.memo(e.GetMemo())
			if !ok {
				continue
			}
			id := e.GetExecution().GetWorkflowId()
			s.mu.Lock()
			if s.running[m.Key] == nil {
				s.running[m.Key] = map[string]bool{}
			}
			s.running[m.Key][id] = true
			s.mu.Unlock()
			go s.watch(m.Key, id)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

func (s *Server) memo(m *commonpb.Memo) (runMemo, bool) {
	var rm runMemo
	p, ok := m.GetFields()[memoKey]
	if !ok {
		return rm, false
	}
	return rm, s.dc.FromPayload(p, &rm) == nil
}

// run is a served run as Temporal describes it.
type run struct {
	id         string
	firstRunID string
	memo       runMemo
	status     enumspb.WorkflowExecutionStatus
	created    time.Time
	history    int64
}

// lookup finds a run this key started. Any other workflow, or a run of
// another key, is "not found": ids are not a way to read others' sessions.
func (s *Server) lookup(ctx context.Context, c caller, id string) (*run, error) {
	if !contract.ValidSessionID(id) {
		return nil, notFound(id)
	}
	d, err := s.opts.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, notFound(id)
		}
		return nil, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", msg: "Temporal did not answer; try again shortly"}
	}
	info := d.GetWorkflowExecutionInfo()
	m, ok := s.memo(info.GetMemo())
	if !ok || info.GetType().GetName() != contract.CoordinationName || m.Key != c.key {
		return nil, notFound(id)
	}
	first := info.GetFirstRunId()
	if first == "" {
		first = info.GetExecution().GetRunId()
	}
	return &run{id: id, firstRunID: first, memo: m, status: info.GetStatus(),
		created: info.GetStartTime().AsTime(), history: info.GetHistoryLength()}, nil
}

// state is the response status of a run: queued until its first workflow
// task has run, then in_progress, then how it ended.
func (r *run) state() string {
	switch r.status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		if r.history <= 3 {
			return "queued"
		}
		return "in_progress"
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "cancelled"
	}
	return "failed"
}
