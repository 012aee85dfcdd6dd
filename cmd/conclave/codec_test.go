package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/conclave-ai/conclave/codec"
)

const testUIOrigin = "http://127.0.0.1:8233"

func testCodec(t *testing.T) *codec.Codec {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	c, err := codec.New(k)
	require.NoError(t, err)
	return c
}

// postPayloads sends payloads the way the Web UI does and parses the reply.
func postPayloads(t *testing.T, url string, in []*commonpb.Payload) []*commonpb.Payload {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: in})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	req.Header.Set("Origin", testUIOrigin)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(data))
	require.Equal(t, testUIOrigin, resp.Header.Get("Access-Control-Allow-Origin"))
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(data, &out), string(data))
	return out.Payloads
}

func TestCodecServerEncodeDecodeOverHTTP(t *testing.T) {
	c := testCodec(t)
	srv := httptest.NewServer(codecHandler(c, []string{testUIOrigin}))
	defer srv.Close()

	in, err := converter.GetDefaultDataConverter().ToPayloads("Create a website about the Beatles.", 7)
	require.NoError(t, err)
	enc := postPayloads(t, srv.URL+"/encode", in.Payloads)
	require.Len(t, enc, 2)
	for _, p := range enc {
		require.Equal(t, codec.Encoding, string(p.Metadata[converter.MetadataEncoding]))
		require.NotContains(t, string(p.Data), "Beatles")
	}
	// What the server encrypted, the workers' codec reads, and back.
	local, err := c.Decode(enc)
	require.NoError(t, err)
	require.Equal(t, in.Payloads[0].Data, local[0].Data)

	dec := postPayloads(t, srv.URL+"/default/decode", enc)
	var task string
	var n int
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(&commonpb.Payloads{Payloads: dec}, &task, &n))
	require.Equal(t, "Create a website about the Beatles.", task)
	require.Equal(t, 7, n)

	// The SDK's own remote codec (what `temporal --codec-endpoint` uses) talks to it too.
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL})
	viaRemote, err := remote.Decode(enc)
	require.NoError(t, err)
	require.Equal(t, in.Payloads[1].Data, viaRemote[1].Data)

	// A tampered payload is refused, not passed on.
	enc[0].Data[len(enc[0].Data)-1] ^= 1
	_, err = remote.Decode(enc)
	require.ErrorContains(t, err, "failed authentication")
}

func TestCodecServerCORS(t *testing.T) {
	srv := httptest.NewServer(codecHandler(testCodec(t), []string{testUIOrigin, "http://localhost:8233"}))
	defer srv.Close()

	preflight := func(origin string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for _, origin := range []string{testUIOrigin, "http://localhost:8233"} {
		resp := preflight(origin)
		require.Equal(t, http.StatusNoContent, resp.StatusCode, origin)
		require.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"))
		require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
		allowed := strings.Split(resp.Header.Get("Access-Control-Allow-Headers"), ",")
		require.Subset(t, allowed, []string{"content-type", "x-namespace", "authorization"})
	}

	resp := preflight("http://evil.example")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))

	// A foreign page's "simple" POST is refused outright, not just unreadable.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/encode", strings.NewReader(`{"payloads":[]}`))
	require.NoError(t, err)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "text/plain")
	r2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	r2.Body.Close()
	require.Equal(t, http.StatusForbidden, r2.StatusCode)

	// Not a codec path.
	r3, err := http.Post(srv.URL+"/other", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	r3.Body.Close()
	require.Equal(t, http.StatusNotFound, r3.StatusCode)
}

func TestCodecServerNeedsKey(t *testing.T) {
	t.Setenv(codec.KeyEnv, "")
	code, _, stderr := runCLI(t, "codec-server", "--listen", "127.0.0.1:0")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, codec.KeyEnv)

	bad := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	t.Setenv(codec.KeyEnv, bad)
	code, _, stderr = runCLI(t, "codec-server", "--listen", "127.0.0.1:0")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, codec.KeyEnv)
	require.NotContains(t, stderr, bad)
}

func TestCodecWithCodecOptions(t *testing.T) {
	base := client.Options{HostPort: "127.0.0.1:7233"}

	t.Setenv(codec.KeyEnv, "")
	o, err := withCodec(base)
	require.NoError(t, err)
	require.Nil(t, o.DataConverter, "no key, no encryption")

	k := make([]byte, 32)
	_, err = rand.Read(k)
	require.NoError(t, err)
	t.Setenv(codec.KeyEnv, base64.StdEncoding.EncodeToString(k))
	o, err = withCodec(base)
	require.NoError(t, err)
	require.NotNil(t, o.DataConverter)
	require.NotNil(t, o.FailureConverter)
	require.Equal(t, base.HostPort, o.HostPort)
	p, err := o.DataConverter.ToPayload("the task")
	require.NoError(t, err)
	require.Equal(t, codec.Encoding, string(p.Metadata[converter.MetadataEncoding]))

	// A bad key stops every command that dials, before it connects.
	t.Setenv(codec.KeyEnv, "not-a-key")
	_, err = withCodec(base)
	require.ErrorContains(t, err, codec.KeyEnv)
	var tf temporalFlags
	tf.address, tf.namespace = "127.0.0.1:1", "default"
	_, err = tf.dial()
	require.ErrorContains(t, err, codec.KeyEnv)
	require.NotContains(t, err.Error(), "not-a-key")
}
