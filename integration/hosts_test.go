//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/conclave-ai/conclave/contract"
	"github.com/conclave-ai/conclave/internal/llmtest"
	"github.com/conclave-ai/conclave/internal/testenv"
	"github.com/conclave-ai/conclave/worker"
	"github.com/conclave-ai/conclave/workflows"
)

// Issue 22, item 3: with a worker's default settings, whoever starts a
// session could point base_url at an internal service; it received a POST
// with the model key, and its reply was quoted into the failure, status and
// history. Now a shared worker (`conclave worker` without
// --allow-private-model-hosts) never connects to a loopback address, and no
// worker quotes a reply that is not a model's; a metadata address is
// refused by the config rules in any spelling.
func TestWorkerModelHosts(t *testing.T) {
	const internalSecret = "db_password=hunter2-internal-service"
	t.Setenv("HOSTS_TEST_KEY", "sk-hosts-test-key")
	bin := conclaveBinary(t)
	temporal := testenv.StartTemporal(t)
	c := temporal.Client(t)
	internal := llmtest.Start(t, llmtest.Respond(llmtest.Reply{Body: internalSecret + "\n", ContentType: "text/plain"}))

	startWorker(t, bin, temporal.HostPort, t.TempDir(), "--allow-key-env", "HOSTS_TEST_KEY", "--allow-private-model-hosts=false")
	startWorker(t, bin, temporal.HostPort, t.TempDir(), "--allow-key-env", "HOSTS_TEST_KEY", "--task-queue", "private-ok")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(id, queue, baseURL string) error {
		cfg := team(t, internal.URL(), "agent_a")
		cfg.Agents[0].Backend.BaseURL = baseURL // as a hand-written workflow input may
		cfg.Agents[0].Backend.APIKeyEnv = "HOSTS_TEST_KEY"
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue},
			contract.CoordinationName, workflows.CoordinationInput{Task: "Say something.", Config: cfg})
		require.NoError(t, err)
		var res workflows.CoordinationResult
		err = run.Get(ctx, &res)
		require.Error(t, err, id)
		history := historyText(t, c, id)
		require.NotContains(t, history, "hunter2", "%s: the internal reply reached the history", id)
		return err
	}

	err := start("hosts-loopback", worker.DefaultTaskQueue, internal.URL())
	require.ErrorContains(t, err, "a loopback address, which this worker does not call")
	require.Equal(t, 0, internal.Count(), "a shared worker must not connect to loopback")

	for _, host := range []string{"169.254.169.254", "0xa9fea9fe", "2852039166", "[fd00:ec2::254]", "metadata.google.internal"} {
		err := start("hosts-metadata-"+strings.NewReplacer("[", "", "]", "", ":", "-").Replace(host), worker.DefaultTaskQueue, "http://"+host+"/v1")
		require.ErrorContains(t, err, "link-local or cloud metadata", host)
	}

	// A worker that allows loopback reaches the service, and its reply,
	// not a model's, is not quoted.
	err = start("hosts-not-a-model", "private-ok", internal.URL())
	require.ErrorContains(t, err, "is not an OpenAI-compatible event stream")
	require.NotContains(t, err.Error(), "hunter2")
	require.Equal(t, 1, internal.Count())
}

// historyText is a workflow's whole history as text, payloads included.
func historyText(t *testing.T, c client.Client, id string) string {
	t.Helper()
	var b strings.Builder
	iter := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		b.WriteString(ev.String()) // payloads are JSON, shown as text
	}
	return b.String()
}
