// Package agenttest helps tests of the agent-step engine's policies.
package agenttest

import (
	"context"
	"sync"
	"testing"

	"github.com/conclave-ai/conclave/engine/agent"
)

// Mem is an agent.Store in memory.
type Mem struct {
	mu   sync.Mutex
	Keys map[string][]byte
}

// Put stores data under key.
func (m *Mem) Put(_ context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Keys == nil {
		m.Keys = map[string][]byte{}
	}
	m.Keys[key] = data
	return nil
}

// Stored is tr as the stored checkpoint of a retried step.
func Stored[S any](tb testing.TB, tr *agent.Transcript[S]) *agent.Prior {
	tb.Helper()
	data, err := tr.MarshalJSONL()
	if err != nil {
		tb.Fatalf("encode the transcript: %v", err)
	}
	return &agent.Prior{Store: &Mem{}, Key: "trace.jsonl", Data: data}
}
