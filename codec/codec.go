// Package codec encrypts Temporal payloads with AES-256-GCM, so workflow
// inputs, results, heartbeats, summaries and failure messages are
// unreadable to anyone who can read the Temporal database or open the Web
// UI without the key. Clients and workers that share the key read them as
// usual; `conclave codec-server` lets the Web UI decode them for an operator
// who runs it with the key.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

const (
	// KeyEnv names the environment variable holding the current key: 32
	// random bytes, base64 or hex encoded (`openssl rand -base64 32`).
	// When it is unset, payloads are not encrypted.
	KeyEnv = "CONCLAVE_CODEC_KEY"
	// OldKeysEnv names the environment variable holding retired keys,
	// comma-separated, in the same format. They only decrypt, so history
	// written before a key rotation stays readable.
	OldKeysEnv = "CONCLAVE_CODEC_OLD_KEYS"

	// Encoding is the metadata encoding of an encrypted payload; Decode
	// passes any other payload through untouched.
	Encoding = "binary/encrypted"
	// MetadataKeyID is the payload metadata field naming the key that
	// encrypted it, so a reader holding several keys picks the right one.
	MetadataKeyID = "encryption-key-id"

	keySize   = 32
	nonceSize = 12
)

// Codec is a converter.PayloadCodec that seals each payload (metadata and
// data, serialized) with AES-256-GCM under a fresh random nonce. The key id
// is authenticated too, so neither it nor the ciphertext can be altered
// without Decode failing.
type Codec struct {
	current string                 // key id used by Encode
	keys    map[string]cipher.AEAD // every key Decode accepts, by id
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a codec that encrypts with key and decrypts with key or any
// of old. Each key must be 32 bytes.
func New(key []byte, old ...[]byte) (*Codec, error) {
	c := &Codec{keys: map[string]cipher.AEAD{}}
	for i, k := range append([][]byte{key}, old...) {
		if len(k) != keySize {
			return nil, fmt.Errorf("codec: key %d is %d bytes; AES-256 needs %d", i, len(k), keySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("codec: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec: %w", err)
		}
		id := KeyID(k)
		if i == 0 {
			c.current = id
		}
		c.keys[id] = aead
	}
	return c, nil
}

// KeyID is the public name of a key: the first 8 bytes of a SHA-256 of it,
// in hex. It goes into every payload's metadata; it tells keys apart
// without revealing anything usable about them.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("conclave payload codec key\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// KeyID returns the id of the key Encode uses, for logs and status lines.
func (c *Codec) KeyID() string { return c.current }

// Encode encrypts every payload with the current key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.keys[c.current]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: serialize payload: %w", err)
		}
		nonce := make([]byte, nonceSize, nonceSize+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("codec: random nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(Encoding),
				MetadataKeyID:              []byte(c.current),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(c.current)),
		}
	}
	return out, nil
}

// Decode decrypts payloads this codec's keys encrypted and returns other
// payloads unchanged, so histories written before encryption was turned on
// still read. A payload that was altered, or encrypted with a key it does
// not hold, is an error.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.keys[id]
		if !ok {
			return nil, fmt.Errorf("codec: payload was encrypted with key %q, but %s is key %q and %s holds %s; "+
				"add the key that wrote it to %s", id, KeyEnv, c.current, OldKeysEnv, c.oldIDs(), OldKeysEnv)
		}
		data := p.GetData()
		if len(data) < nonceSize+aead.Overhead() {
			return nil, fmt.Errorf("codec: encrypted payload is %d bytes, too short to be genuine", len(data))
		}
		plain, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("codec: encrypted payload (key %q) failed authentication: it was altered", id)
		}
		dec := &commonpb.Payload{}
		if err := proto.Unmarshal(plain, dec); err != nil {
			return nil, fmt.Errorf("codec: decrypted payload does not parse: %w", err)
		}
		out[i] = dec
	}
	return out, nil
}

func (c *Codec) oldIDs() string {
	var ids []string
	for id := range c.keys {
		if id != c.current {
			ids = append(ids, fmt.Sprintf("%q", id))
		}
	}
	if len(ids) == 0 {
		return "no keys"
	}
	sort.Strings(ids)
	return "keys " + strings.Join(ids, ", ")
}

// ParseKey decodes a key written as 64 hex digits or as base64 (standard
// or URL alphabet, padded or not). Errors never quote the input: it is a
// secret.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*keySize {
		if k, err := hex.DecodeString(s); err == nil {
			return k, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(k) != keySize {
			return nil, fmt.Errorf("the key decodes to %d bytes, AES-256 needs %d", len(k), keySize)
		}
		return k, nil
	}
	return nil, fmt.Errorf("the key is neither %d hex digits nor base64", 2*keySize)
}

// FromEnv builds the codec from KeyEnv and OldKeysEnv as getenv reports
// them (os.Getenv in a binary, a map in tests). ok is false, with no error,
// when KeyEnv is unset: encryption is optional. Errors name the variable
// and never contain its value.
func FromEnv(getenv func(string) string) (c *Codec, ok bool, err error) {
	raw := getenv(KeyEnv)
	if strings.TrimSpace(raw) == "" {
		if strings.TrimSpace(getenv(OldKeysEnv)) != "" {
			return nil, false, fmt.Errorf("codec: %s is set but %s is not; set the current key too", OldKeysEnv, KeyEnv)
		}
		return nil, false, nil
	}
	key, err := ParseKey(raw)
	if err != nil {
		return nil, false, fmt.Errorf("codec: %s: %w; generate one with `openssl rand -base64 32`", KeyEnv, err)
	}
	var old [][]byte
	for i, part := range strings.Split(getenv(OldKeysEnv), ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, err := ParseKey(part)
		if err != nil {
			return nil, false, fmt.Errorf("codec: %s, entry %d: %w", OldKeysEnv, i+1, err)
		}
		old = append(old, k)
	}
	c, err = New(key, old...)
	if err != nil {
		return nil, false, err
	}
	return c, true, nil
}

// DataConverter is Temporal's default data converter with c applied after
// serialization, for client.Options.DataConverter.
func DataConverter(c converter.PayloadCodec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// ClientOptions returns o set up to encrypt with c: payloads through
// DataConverter, and failure messages and stack traces too, because error
// text can quote a task or an answer. A worker built on the client uses
// both. Clients without c still read unencrypted payloads and see
// encrypted ones as opaque bytes.
func ClientOptions(o client.Options, c converter.PayloadCodec) client.Options {
	dc := DataConverter(c)
	o.DataConverter = dc
	o.FailureConverter = temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter:          dc,
		EncodeCommonAttributes: true,
	})
	return o
}
