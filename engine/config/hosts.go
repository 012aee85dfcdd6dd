package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// AddressClass is what kind of network a model host's address is on; a
// worker calls each kind only as its operator decided (Egress.CheckAddress).
type AddressClass int

const (
	// Public addresses are called when the host is allowed.
	Public AddressClass = iota
	// Loopback is this machine (127.0.0.0/8, ::1, and the unspecified
	// address, which connects here).
	Loopback
	// Private ranges are the operator's own networks: RFC 1918, carrier
	// NAT (100.64.0.0/10), IPv6 unique local (fc00::/7).
	Private
	// LinkLocal addresses (169.254.0.0/16, fe80::/10) and the clouds'
	// metadata services are never called: they hand out the worker's
	// cloud credentials.
	LinkLocal
)

func (c AddressClass) String() string {
	switch c {
	case Loopback:
		return "loopback"
	case Private:
		return "private"
	case LinkLocal:
		return "link-local or cloud metadata"
	}
	return "public"
}

var (
	carrierNAT = netip.MustParsePrefix("100.64.0.0/10")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	// metadataAddrs are cloud metadata services outside link-local
	// ranges: AWS over IPv6, Alibaba Cloud, Oracle Cloud.
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
		netip.MustParseAddr("192.0.0.192"),
	}
	// metadataNames resolve to a metadata service inside a cloud.
	metadataNames = []string{
		"metadata", "metadata.google.internal", "metadata.goog", "instance-data",
		"instance-data.ec2.internal", "metadata.azure.com", "metadata.platformequinix.com",
	}
)

// ClassifyAddress says which kind of network ip is on. An IPv4 address
// inside IPv6 (mapped, NAT64, 6to4) is classified as the IPv4 address.
func ClassifyAddress(ip netip.Addr) AddressClass {
	ip = embeddedV4(ip)
	for _, m := range metadataAddrs {
		if ip == m {
			return LinkLocal
		}
	}
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return LinkLocal
	case ip.IsLoopback() || ip.IsUnspecified():
		return Loopback
	case ip.IsPrivate() || carrierNAT.Contains(ip) || !ip.IsGlobalUnicast():
		return Private
	}
	return Public
}

func embeddedV4(ip netip.Addr) netip.Addr {
	ip = ip.Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if ip.Is6() && sixToFour.Contains(ip) {
		b := ip.As16()
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return ip
}

// ClassifyHost classifies a URL's host name as written, before any lookup:
// an IP address in any spelling a resolver accepts (dotted, decimal, hex,
// octal, shortened: 169.254.169.254, 2852039166, 0xa9fea9fe,
// 0251.0376.0251.0376, 169.254.43518, [::ffff:a9fe:a9fe]), or a cloud
// metadata name. Any other name is Public here; the worker checks the
// addresses it resolves to when it connects.
func ClassifyHost(host string) AddressClass {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	for _, n := range metadataNames {
		if h == n {
			return LinkLocal
		}
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return Loopback
	}
	if i := strings.IndexByte(h, '%'); i >= 0 { // an IPv6 zone
		h = h[:i]
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ClassifyAddress(ip)
	}
	if ip, ok := parseLegacyIPv4(h); ok {
		return ClassifyAddress(ip)
	}
	return Public
}

// parseLegacyIPv4 reads the IPv4 spellings of inet_aton: one to four
// parts, each decimal, 0x-hex or 0-octal, the last filling the rest.
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 || s == "" {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		if p == "" && base == 16 {
			p = "0"
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// refusedHost is the message for a base_url host no worker calls.
func refusedHost(host string) string {
	return fmt.Sprintf("host %s is a link-local or cloud metadata address, which no worker ever calls (it hands out the machine's cloud credentials); use the model server's own address", host)
}
