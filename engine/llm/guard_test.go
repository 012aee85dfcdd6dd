package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/engine/config"
	"github.com/conclave-ai/conclave/internal/llmtest"
)

func guardedModel(t *testing.T, base string, g Guard) (*OpenAI, error) {
	t.Helper()
	return New(Config{Model: "m", BaseURL: base, Guard: g}, testKey)
}

// Issue 22, item 3: a shared worker posted the model key to a loopback or
// private service. It now refuses at connect time, after resolving the
// name, and the service receives nothing.
func TestGuardRefusesLoopbackAfterResolving(t *testing.T) {
	s := llmtest.Start(t, llmtest.Text("secret internal reply"))
	shared := config.Egress{}.WithPrivateHosts(config.NoPrivateHosts)
	u, _ := url.Parse(s.URL())
	for _, base := range []string{s.URL(), "http://localhost:" + u.Port() + "/v1"} {
		m, err := guardedModel(t, base, shared)
		require.NoError(t, err)
		_, err = m.Complete(context.Background(), Request{Messages: hello})
		require.Error(t, err, base)
		assert.ErrorIs(t, err, ErrHostRefused)
		assert.False(t, IsRetryable(err))
		assert.Contains(t, err.Error(), "a loopback address, which this worker does not call")
		assert.NotContains(t, err.Error(), "secret internal reply")
	}
	assert.Equal(t, 0, s.Count(), "nothing reached the service")

	// A developer's machine calls loopback.
	m, err := guardedModel(t, s.URL(), config.Egress{})
	require.NoError(t, err)
	_, err = m.Complete(context.Background(), Request{Messages: hello})
	require.NoError(t, err)
}

// A model server's redirect is checked like the base_url: never to a
// metadata address in any spelling, never to a host the worker does not
// list.
func TestGuardChecksRedirects(t *testing.T) {
	target := llmtest.Start(t, llmtest.Text("redirected"))
	var location string
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, location, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	ru, _ := url.Parse(redirector.URL)
	tu, _ := url.Parse(target.URL())
	listed, err := config.NewEgress(nil, []string{ru.Host})
	require.NoError(t, err)
	for _, tc := range []struct {
		to   string
		g    Guard
		want string
	}{
		{"http://0xa9fea9fe/latest/meta-data/", config.Egress{}.WithPrivateHosts(config.AllPrivateHosts), "link-local or cloud metadata"},
		{"http://[fd00:ec2::254]/latest/", config.Egress{}.WithPrivateHosts(config.AllPrivateHosts), "link-local or cloud metadata"},
		{target.URL() + "/chat/completions", listed.WithPrivateHosts(config.NoPrivateHosts), "is not one this worker calls"},
		{"http://localhost:" + tu.Port() + "/v1/chat/completions", listed.WithPrivateHosts(config.NoPrivateHosts), "is not one this worker calls"},
	} {
		location = tc.to
		m, err := guardedModel(t, redirector.URL+"/v1", tc.g)
		require.NoError(t, err)
		_, err = m.Complete(context.Background(), Request{Messages: hello})
		require.Error(t, err, tc.to)
		assert.ErrorIs(t, err, ErrHostRefused, tc.to)
		assert.Contains(t, err.Error(), tc.want, tc.to)
	}
	assert.Equal(t, 0, target.Count())

}
