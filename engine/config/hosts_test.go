package config

import (
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 22, item 3: validate accepted the metadata address in every
// spelling. Each is link-local whatever way it is written.
func TestClassifyHostSpellings(t *testing.T) {
	for host, want := range map[string]AddressClass{
		"169.254.169.254":            LinkLocal,
		"2852039166":                 LinkLocal, // decimal
		"0xa9fea9fe":                 LinkLocal, // hex
		"0xA9FEA9FE":                 LinkLocal,
		"0251.0376.0251.0376":        LinkLocal, // octal
		"169.254.43518":              LinkLocal, // shortened
		"0xa9.0xfe.0xa9.0xfe":        LinkLocal,
		"169.254.169.254.":           LinkLocal,
		"[::ffff:169.254.169.254]":   LinkLocal, // IPv4-mapped
		"[::ffff:a9fe:a9fe]":         LinkLocal,
		"[64:ff9b::a9fe:a9fe]":       LinkLocal, // NAT64
		"[2002:a9fe:a9fe::1]":        LinkLocal, // 6to4
		"[fd00:ec2::254]":            LinkLocal, // AWS IMDS over IPv6
		"[fe80::1%25eth0]":           LinkLocal,
		"[fe80::1]":                  LinkLocal,
		"metadata.google.internal":   LinkLocal,
		"METADATA.GOOGLE.INTERNAL.":  LinkLocal,
		"metadata":                   LinkLocal,
		"100.100.100.200":            LinkLocal, // Alibaba Cloud
		"127.0.0.1":                  Loopback,
		"2130706433":                 Loopback,
		"0x7f000001":                 Loopback,
		"127.1":                      Loopback,
		"0":                          Loopback, // 0.0.0.0 connects here
		"[::]":                       Loopback,
		"[::1]":                      Loopback,
		"localhost":                  Loopback,
		"api.localhost":              Loopback,
		"10.0.0.5":                   Private,
		"012.0.0.5":                  Private, // octal 10
		"192.168.1.1":                Private,
		"172.16.0.1":                 Private,
		"100.64.0.1":                 Private,
		"[fd12:3456::1]":             Private,
		"api.openai.com":             Public,
		"8.8.8.8":                    Public,
		"134744072":                  Public, // 8.8.8.8
		"1.2.3.4.5":                  Public, // not an address: a name
		"0x1g":                       Public,
		"metadata.google.internal.x": Public,
	} {
		assert.Equal(t, want, ClassifyHost(host), host)
	}
}

func TestCheckAddressByPolicy(t *testing.T) {
	loop, private, link, public := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.1.2.3"),
		netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("93.184.216.34")
	listed, err := NewEgress(nil, []string{"models.internal", "127.0.0.1:8000"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		e    Egress
		host string
		port string
		ip   netip.Addr
		ok   bool
	}{
		{"shared worker, public", Egress{}.WithPrivateHosts(NoPrivateHosts), "api.example.com", "443", public, true},
		{"shared worker, loopback", Egress{}.WithPrivateHosts(NoPrivateHosts), "localhost", "8000", loop, false},
		{"shared worker, private", Egress{}.WithPrivateHosts(NoPrivateHosts), "llm", "8000", private, false},
		{"developer, loopback", Egress{}, "localhost", "8000", loop, true},
		{"developer, private", Egress{}, "llm", "8000", private, false},
		{"all private", Egress{}.WithPrivateHosts(AllPrivateHosts), "llm", "8000", private, true},
		{"all private, metadata", Egress{}.WithPrivateHosts(AllPrivateHosts), "evil.example", "80", link, false},
		{"listed name, private", listed.WithPrivateHosts(NoPrivateHosts), "models.internal", "443", private, true},
		{"listed host:port, loopback", listed.WithPrivateHosts(NoPrivateHosts), "127.0.0.1", "8000", loop, true},
		{"listed host, other port", listed.WithPrivateHosts(NoPrivateHosts), "127.0.0.1", "9000", loop, false},
		{"listed name, metadata", listed.WithPrivateHosts(AllPrivateHosts), "models.internal", "443", link, false},
	} {
		err := tc.e.CheckAddress(tc.host, tc.port, tc.ip)
		assert.Equal(t, tc.ok, err == nil, "%s: %v", tc.name, err)
	}
}

func TestCheckURLRefusesMetadataAndUnlistedHosts(t *testing.T) {
	listed, err := NewEgress(nil, []string{"api.openai.com"})
	require.NoError(t, err)
	for raw, ok := range map[string]bool{
		"https://api.openai.com/v1":            true,
		"http://0xa9fea9fe/latest/meta-data/":  false,
		"http://metadata.google.internal/":     false,
		"https://evil.example/v1":              false,
		"https://api.openai.com.evil.example/": false,
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		assert.Equal(t, ok, listed.CheckURL(u) == nil, raw)
	}
	u, _ := url.Parse("http://[fd00:ec2::254]/")
	assert.ErrorContains(t, Egress{}.CheckURL(u), "link-local or cloud metadata")
}

// The config refuses a metadata base_url in any spelling, before a worker
// would be asked.
func TestConfigRefusesMetadataBaseURL(t *testing.T) {
	for _, host := range []string{"169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "[fd00:ec2::254]", "metadata.google.internal", "[::ffff:a9fe:a9fe]"} {
		_, err := Parse([]byte("agents:\n  - id: a\n    backend:\n      model: m\n      base_url: http://"+host+"/v1\n"), "config.yaml")
		require.Error(t, err, host)
		assert.Contains(t, err.Error(), "link-local or cloud metadata address", host)
	}
}
