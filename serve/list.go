package serve

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/conclave-ai/conclave/contract"
)

// Bounds of GET /v1/responses: the runs it lists, and the workflows it
// reads from Temporal to find them (a namespace without the key's search
// attribute is filtered by memo).
const (
	maxListed   = 100
	maxListScan = 1000
)

// listResponses answers GET /v1/responses: the calling key's own runs,
// newest first, so a client that lost a foreground request's connection
// can find its run's id.
func (s *Server) listResponses(w http.ResponseWriter, r *http.Request, c caller) {
	limit := maxListed
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListed {
			writeError(w, badRequest("limit", "limit must be between 1 and %d", maxListed))
			return
		}
		limit = n
	}
	query := fmt.Sprintf("WorkflowType = %q", contract.CoordinationName)
	if s.opts.KeySearchAttribute && c.key != "" {
		// Key names are letters, digits, '.', '_' and '-' (validKeyName).
		query += fmt.Sprintf(" AND %s = %q", contract.SearchAttrServeKey, c.key)
	}
	type item struct {
		ID        string `json:"id"`
		Object    string `json:"object"`
		Status    string `json:"status"`
		CreatedAt int64  `json:"created_at"`
		Model     string `json:"model"`
	}
	items := []item{}
	seen := map[string]bool{} // a run continued as new is listed once per Temporal run
	var token []byte
	scanned, more := 0, false
	for {
		resp, err := s.opts.Client.ListWorkflow(r.Context(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: query, PageSize: maxListed, NextPageToken: token,
		})
		if err != nil {
			if r.Context().Err() == nil {
				s.log.Warn("list runs failed", "key", c.key, "error", err)
				writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", msg: "Temporal did not list the runs; try again shortly"})
			}
			return
		}
		for _, e := range resp.GetExecutions() {
			scanned++
			m, ok := s.memo(e.GetMemo())
			id := e.GetExecution().GetWorkflowId()
			if !ok || m.Key != c.key || seen[id] {
				continue
			}
			if len(items) == limit {
				more = true
				break
			}
			seen[id] = true
			run := &run{status: e.GetStatus(), history: e.GetHistoryLength()}
			items = append(items, item{ID: id, Object: "response", Status: run.state(),
				CreatedAt: e.GetStartTime().AsTime().Unix(), Model: m.Model})
		}
		token = resp.GetNextPageToken()
		if more || len(token) == 0 {
			break
		}
		if scanned >= maxListScan {
			more = true
			break
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].CreatedAt > items[j].CreatedAt })
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": items, "has_more": more})
}
