//go:build integration

// Package integration runs whole Conclave sessions against real parts: a
// Temporal dev server, MinIO and the real openai-go client talking to the
// scripted model server.
package integration

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/engine/storage"
	"github.com/conclave-ai/conclave/internal/testenv"
)

// team is a config of n agents whose model names tell the scripted server
// which agent is calling ("m-agent_a").
func team(t *testing.T, baseURL string, ids ...string) config.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("agents:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  - id: %s\n    backend: {type: openai, model: m-%s, base_url: %s}\n", id, id, baseURL)
	}
	b.WriteString("orchestrator:\n  orchestrator_timeout_seconds: 300\n")
	cfg, err := config.Parse([]byte(b.String()), "team.yaml")
	require.NoError(t, err)
	return *cfg
}

// agentOf tells which agent a request comes from.
func agentOf(model string) string { return strings.TrimPrefix(model, "m-") }

func s3Store(t *testing.T, m *testenv.MinIO, prefix string) (storage.Store, string) {
	t.Helper()
	url := m.URL("conclave", prefix)
	st, err := storage.Open(context.Background(), url)
	require.NoError(t, err)
	agreeAtCleanup(t, st)
	return st, url
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// conclaveBinary builds cmd/conclave once per test run, for tests that need
// a worker in its own process (to kill it).
func conclaveBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "conclave-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "conclave")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/conclave")
		cmd.Dir = testenv.ModuleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func subStore(st storage.Store, prefix string) storage.Store { return storage.Sub(st, prefix) }

var payloadData = regexp.MustCompile(`"data":"([A-Za-z0-9+/=]+)"`)

// decodePayloads appends the decoded text of every payload in an event's
// JSON, so assertions read what the history really holds.
func decodePayloads(eventJSON string) string {
	var b strings.Builder
	b.WriteString(eventJSON)
	for _, m := range payloadData.FindAllStringSubmatch(eventJSON, -1) {
		if data, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			b.WriteString("\n")
			b.Write(data)
		}
	}
	return b.String()
}

// runBin runs a built binary and returns its output and exit code.
func runBin(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errb.String(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errb.String(), 0
}
