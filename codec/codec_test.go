package codec

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func randomKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	_, err := rand.Read(k)
	require.NoError(t, err)
	return k
}

func newCodec(t *testing.T, key []byte, old ...[]byte) *Codec {
	t.Helper()
	c, err := New(key, old...)
	require.NoError(t, err)
	return c
}

func plainPayloads(t *testing.T, values ...any) []*commonpb.Payload {
	t.Helper()
	ps, err := converter.GetDefaultDataConverter().ToPayloads(values...)
	require.NoError(t, err)
	return ps.Payloads
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestCodecRoundTrip(t *testing.T) {
	c := newCodec(t, randomKey(t))
	in := plainPayloads(t, "Create a website about the Beatles.", map[string]int{"votes": 3}, []byte{0, 1, 2}, nil)
	enc, err := c.Encode(in)
	require.NoError(t, err)
	require.Len(t, enc, len(in))
	for i, p := range enc {
		require.Equal(t, Encoding, string(p.Metadata[converter.MetadataEncoding]))
		require.Equal(t, c.KeyID(), string(p.Metadata[MetadataKeyID]))
		require.NotContains(t, string(p.Data), "Beatles")
		require.NotEqual(t, in[i].Data, p.Data)
	}
	dec, err := c.Decode(enc)
	require.NoError(t, err)
	require.Len(t, dec, len(in))
	for i := range in {
		require.Equal(t, in[i].Metadata, dec[i].Metadata)
		require.Equal(t, in[i].Data, dec[i].Data)
	}

	// A fresh nonce per payload: the same value never encrypts the same way.
	again, err := c.Encode(in[:1])
	require.NoError(t, err)
	require.NotEqual(t, enc[0].Data, again[0].Data)
}

func TestCodecDataConverterRoundTrip(t *testing.T) {
	c := newCodec(t, randomKey(t))
	dc := DataConverter(c)
	p, err := dc.ToPayload("the secret task")
	require.NoError(t, err)
	require.NotContains(t, string(p.Data), "secret task")
	var got string
	require.NoError(t, dc.FromPayload(p, &got))
	require.Equal(t, "the secret task", got)
}

func TestCodecTamperDetected(t *testing.T) {
	c := newCodec(t, randomKey(t))
	enc, err := c.Encode(plainPayloads(t, "the secret task"))
	require.NoError(t, err)
	for i := range enc[0].Data {
		bad := &commonpb.Payload{Metadata: enc[0].Metadata, Data: bytes.Clone(enc[0].Data)}
		bad.Data[i] ^= 0x01
		_, err := c.Decode([]*commonpb.Payload{bad})
		require.Error(t, err, "flipping byte %d went unnoticed", i)
		require.Contains(t, err.Error(), "failed authentication")
	}
	short := &commonpb.Payload{Metadata: enc[0].Metadata, Data: enc[0].Data[:20]}
	_, err = c.Decode([]*commonpb.Payload{short})
	require.ErrorContains(t, err, "too short")
}

func TestCodecKeyIDIsAuthenticated(t *testing.T) {
	// Relabelling a payload with another key id the reader holds must not
	// make it decrypt under that key's name.
	a, b := randomKey(t), randomKey(t)
	writer := newCodec(t, a)
	reader := newCodec(t, a, b)
	enc, err := writer.Encode(plainPayloads(t, "x"))
	require.NoError(t, err)
	enc[0].Metadata[MetadataKeyID] = []byte(KeyID(b))
	_, err = reader.Decode(enc)
	require.ErrorContains(t, err, "failed authentication")
}

func TestCodecWrongKey(t *testing.T) {
	writer := newCodec(t, randomKey(t))
	reader := newCodec(t, randomKey(t))
	enc, err := writer.Encode(plainPayloads(t, "the secret task"))
	require.NoError(t, err)
	_, err = reader.Decode(enc)
	require.Error(t, err)
	require.Contains(t, err.Error(), writer.KeyID())
	require.Contains(t, err.Error(), OldKeysEnv)

	// The same ciphertext under the right id but the wrong key bytes.
	forged := newCodec(t, randomKey(t))
	forged.keys = map[string]cipher.AEAD{writer.KeyID(): forged.keys[forged.KeyID()]}
	_, err = forged.Decode(enc)
	require.ErrorContains(t, err, "failed authentication")
}

func TestCodecRotation(t *testing.T) {
	oldKey, newKey := randomKey(t), randomKey(t)
	before, err := newCodec(t, oldKey).Encode(plainPayloads(t, "written before rotation"))
	require.NoError(t, err)
	rotated := newCodec(t, newKey, oldKey)
	after, err := rotated.Encode(plainPayloads(t, "written after rotation"))
	require.NoError(t, err)
	require.Equal(t, KeyID(newKey), string(after[0].Metadata[MetadataKeyID]))

	dec, err := rotated.Decode(append(before, after...))
	require.NoError(t, err)
	var s1, s2 string
	dc := converter.GetDefaultDataConverter()
	require.NoError(t, dc.FromPayload(dec[0], &s1))
	require.NoError(t, dc.FromPayload(dec[1], &s2))
	require.Equal(t, "written before rotation", s1)
	require.Equal(t, "written after rotation", s2)
}

func TestCodecPassesThroughUnencrypted(t *testing.T) {
	c := newCodec(t, randomKey(t))
	in := plainPayloads(t, "written before encryption was on", 42)
	in = append(in, &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("binary/zlib")}, Data: []byte{1, 2, 3}})
	out, err := c.Decode(in)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestCodecParseKey(t *testing.T) {
	k := randomKey(t)
	for name, s := range map[string]string{
		"hex":            hex.EncodeToString(k),
		"hex upper":      strings.ToUpper(hex.EncodeToString(k)),
		"base64":         base64.StdEncoding.EncodeToString(k),
		"base64 raw":     base64.RawStdEncoding.EncodeToString(k),
		"base64 url":     base64.URLEncoding.EncodeToString(k),
		"base64 raw url": base64.RawURLEncoding.EncodeToString(k),
		"newline":        base64.StdEncoding.EncodeToString(k) + "\n",
	} {
		got, err := ParseKey(s)
		require.NoError(t, err, name)
		require.Equal(t, k, got, name)
	}
}

func TestCodecFromEnv(t *testing.T) {
	c, ok, err := FromEnv(env(nil))
	require.NoError(t, err)
	require.False(t, ok)
	require.Nil(t, c)

	k := randomKey(t)
	c, ok, err = FromEnv(env(map[string]string{KeyEnv: base64.StdEncoding.EncodeToString(k)}))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, KeyID(k), c.KeyID())

	old := randomKey(t)
	c, ok, err = FromEnv(env(map[string]string{KeyEnv: hex.EncodeToString(k), OldKeysEnv: " , " + base64.StdEncoding.EncodeToString(old) + ","}))
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, c.keys, 2)
	require.Contains(t, c.keys, KeyID(old))
}

func TestCodecFromEnvBadKey(t *testing.T) {
	k := randomKey(t)
	for name, value := range map[string]string{
		"16 bytes base64":   base64.StdEncoding.EncodeToString(k[:16]),
		"48 bytes base64":   base64.StdEncoding.EncodeToString(append(k, k[:16]...)),
		"31 bytes hex":      hex.EncodeToString(k[:31]),
		"a passphrase":      "correct horse battery staple!",
		"a pasted api key":  "sk-live-0123456789abcdefSECRET",
		"hex with a typo":   hex.EncodeToString(k)[:63] + "g",
		"base64 with space": base64.StdEncoding.EncodeToString(k[:16]) + " " + base64.StdEncoding.EncodeToString(k[16:]),
	} {
		_, ok, err := FromEnv(env(map[string]string{KeyEnv: value}))
		require.Error(t, err, name)
		require.False(t, ok, name)
		require.Contains(t, err.Error(), KeyEnv, name)
		require.NotContains(t, err.Error(), strings.TrimSpace(value), name)
		for _, part := range strings.Fields(value) {
			require.NotContains(t, err.Error(), part, name)
		}
	}

	good := base64.StdEncoding.EncodeToString(k)
	bad := hex.EncodeToString(k[:8])
	_, _, err := FromEnv(env(map[string]string{KeyEnv: good, OldKeysEnv: good + "," + bad}))
	require.ErrorContains(t, err, OldKeysEnv+", entry 2")
	require.NotContains(t, err.Error(), bad)
	require.NotContains(t, err.Error(), good)

	_, _, err = FromEnv(env(map[string]string{OldKeysEnv: good}))
	require.ErrorContains(t, err, KeyEnv)
	require.NotContains(t, err.Error(), good)
}

func TestCodecNewRejectsShortKey(t *testing.T) {
	_, err := New(make([]byte, 16))
	require.ErrorContains(t, err, "32")
	_, err = New(make([]byte, 32), make([]byte, 24))
	require.ErrorContains(t, err, "key 1")
}
