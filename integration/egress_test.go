//go:build integration

package integration

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/engine/coord"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// TestWorkerEgress runs `conclave worker` in its own process with an
// allowed key variable and an allowed model host, then starts sessions whose
// config asks it to send an infrastructure variable (AWS_SECRET_ACCESS_KEY)
// to a listener, an allowed key to a host it does not allow, or a variable
// nobody allowed. Each such session fails at once with a message naming the
// variable or the host and never the value, and no model server receives a
// request; the allowed variable on the allowed host works.
func TestWorkerEgress(t *testing.T) {
	const awsSecret = "aws-SECRET-egress-test-0123456789"
	const allowedEnv, allowedKey = "EGRESS_TEST_KEY", "sk-egress-test-allowed"
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsSecret) // the worker inherits it
	t.Setenv(allowedEnv, allowedKey)

	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	c := temporal.Client(t)
	script := llmtest.Func(func(r llmtest.Request) llmtest.Reply {
		switch {
		case strings.Contains(r.Messages[0].Content, "present the final answer"):
			return call("new_answer", map[string]string{"content": "the final answer"})
		case r.HasTool("vote") && r.Contains("<agent1."):
			return call("vote", map[string]string{"agent_id": "agent1", "reason": "it is complete"})
		default:
			return call("new_answer", map[string]string{"content": "an answer"})
		}
	})
	allowed := llmtest.Start(t, script)  // a listed host
	listener := llmtest.Start(t, script) // the collector of whoever starts workflows
	u, err := url.Parse(allowed.URL())
	require.NoError(t, err)
	lu, err := url.Parse(listener.URL())
	require.NoError(t, err)

	// The flag refuses an infrastructure variable at startup.
	_, errOut, code := runBin(t, bin, "worker", "--address", temporal.HostPort, "--allow-key-env", "AWS_SECRET_ACCESS_KEY")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "AWS_SECRET_ACCESS_KEY is refused: AWS_* is the worker's infrastructure")

	startWorker(t, bin, temporal.HostPort, t.TempDir(),
		"--allow-key-env", allowedEnv, "--allow-model-host", u.Host, "--allow-model-host", lu.Hostname()+":1")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// keyEnvs name each agent's variable; the agents after the first use
	// the allowed variable on the allowed host.
	start := func(id, baseURL string, keyEnvs ...string) (workflows.CoordinationResult, error) {
		ids := []string{"agent_a", "agent_b", "agent_c"}[:len(keyEnvs)]
		cfg := team(t, allowed.URL(), ids...)
		cfg.Agents[0].Backend.BaseURL = baseURL
		for i, env := range keyEnvs {
			cfg.Agents[i].Backend.APIKeyEnv = env
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: worker.DefaultTaskQueue},
			contract.CoordinationName, workflows.CoordinationInput{Task: "Say something durable.", Config: cfg})
		require.NoError(t, err)
		var res workflows.CoordinationResult
		return res, run.Get(ctx, &res)
	}

	for _, c := range []struct {
		name, baseURL string
		keyEnvs       []string
		want          string
	}{
		// No worker sends an infrastructure variable, so the input itself
		// is refused, the whole team with it.
		{"infrastructure variable", listener.URL(), []string{"AWS_SECRET_ACCESS_KEY"}, "AWS_SECRET_ACCESS_KEY is a worker's infrastructure variable (AWS_*)"},
		{"infrastructure variable in a team", listener.URL(), []string{"AWS_SECRET_ACCESS_KEY", allowedEnv, allowedEnv}, "config.agents[0].backend.api_key_env: AWS_SECRET_ACCESS_KEY"},
		// What this worker allows is its own decision, made by the step.
		{"allowed key on a host not allowed", listener.URL(), []string{allowedEnv}, "model host 127.0.0.1:"},
		{"variable nobody allowed", allowed.URL(), []string{"HOME_GROWN_KEY"}, "--allow-key-env HOME_GROWN_KEY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			begin := time.Now()
			_, err := start("egress-"+strings.ReplaceAll(c.name, " ", "-"), c.baseURL, c.keyEnvs...)
			require.Error(t, err)
			t.Logf("failed after %s: %v", time.Since(begin).Round(time.Millisecond), err)
			require.Contains(t, err.Error(), c.want)
			require.NotContains(t, err.Error(), awsSecret)
			require.NotContains(t, err.Error(), allowedKey)
			require.Less(t, time.Since(begin), 30*time.Second, "a refused backend must fail the session at once")
		})
	}
	require.Empty(t, listener.Requests(), "the listener must receive no request, with or without a key")
	require.Empty(t, allowed.Requests(), "a refused session must call no model")

	res, err := start("egress-allowed", allowed.URL(), allowedEnv)
	require.NoError(t, err)
	require.Equal(t, coord.StatusConsensus, res.Status)
	reqs := allowed.Requests()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		require.Equal(t, "Bearer "+allowedKey, r.Header.Get("Authorization"))
	}
}
