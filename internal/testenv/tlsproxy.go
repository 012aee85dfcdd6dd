package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestPKI is a certificate authority made for one test, with a server
// certificate for 127.0.0.1/localhost and a client certificate, all as PEM
// files in a temporary directory.
type TestPKI struct {
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string

	pool   *x509.CertPool
	server tls.Certificate
}

// NewPKI generates the CA and both certificates (ECDSA P-256, valid for a day).
func NewPKI(t testing.TB) *TestPKI {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "conclave test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("testenv: create CA: %v", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &TestPKI{CAFile: filepath.Join(dir, "ca.pem"), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	writePEM(t, p.CAFile, "CERTIFICATE", caDER)

	issue := func(serial int64, name string, usage x509.ExtKeyUsage, certFile, keyFile string) tls.Certificate {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("testenv: issue %s certificate: %v", name, err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatalf("testenv: marshal key: %v", err)
		}
		writePEM(t, certFile, "CERTIFICATE", der)
		writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatalf("testenv: load %s certificate: %v", name, err)
		}
		return cert
	}
	p.ServerCertFile, p.ServerKeyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	p.ClientCertFile, p.ClientKeyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	p.server = issue(2, "temporal frontend", x509.ExtKeyUsageServerAuth, p.ServerCertFile, p.ServerKeyFile)
	issue(3, "conclave worker", x509.ExtKeyUsageClientAuth, p.ClientCertFile, p.ClientKeyFile)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testenv: generate key: %v", err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("testenv: write %s: %v", path, err)
	}
}

// TLSProxy terminates TLS in front of a plaintext server, the way a load
// balancer or Temporal Cloud's front door does: clients must speak TLS and,
// with mTLS, present a certificate the test CA signed.
type TLSProxy struct {
	Addr string
	// Handshakes counts completed TLS handshakes.
	Handshakes atomic.Int64
}

// StartTLSProxy listens on a free loopback port and forwards every
// connection to backend once its handshake succeeds. It stops when the test ends.
func StartTLSProxy(t testing.TB, pki *TestPKI, backend string, requireClientCert bool) *TLSProxy {
	t.Helper()
	conf := &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		// gRPC clients insist on ALPN h2.
		NextProtos: []string{"h2"},
		MinVersion: tls.VersionTLS12,
	}
	if requireClientCert {
		conf.ClientAuth, conf.ClientCAs = tls.RequireAndVerifyClientCert, pki.pool
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", conf)
	if err != nil {
		t.Fatalf("testenv: TLS proxy listen: %v", err)
	}
	p := &TLSProxy{Addr: l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c.(*tls.Conn), backend)
		}
	}()
	t.Cleanup(func() { l.Close() })
	return p
}

func (p *TLSProxy) serve(c *tls.Conn, backend string) {
	defer c.Close()
	if err := c.Handshake(); err != nil {
		return
	}
	p.Handshakes.Add(1)
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
	<-done
}
