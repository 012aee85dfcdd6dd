package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Guard is the worker's rule for where a model call may go (config.Egress).
// It is asked for every request, redirects included, and for every
// connection with the address the host resolved to, so no spelling of a
// name and no DNS answer can reach an address the rule refuses.
type Guard interface {
	CheckURL(u *url.URL) error
	CheckAddress(host, port string, ip netip.Addr) error
}

// ErrHostRefused marks a call the Guard refused; it is not retryable.
var ErrHostRefused = errors.New("model host refused by this worker")

// maxRedirects bounds the redirects one call follows.
const maxRedirects = 5

// guardedClient is the default client, with g checking every request and
// connection. The wait for response headers is bounded, as the SDK's own
// default does, so a server that accepts and never answers fails instead
// of hanging; the body is bounded by Limits.
func guardedClient(g Guard) *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		t = &http.Transport{}
	}
	t = t.Clone()
	t.ResponseHeaderTimeout = 10 * time.Minute
	c := &http.Client{Transport: t}
	if g == nil {
		return c
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("%w: connecting to %s: %v", ErrHostRefused, address, err)
				}
				if err := g.CheckAddress(host, port, ap.Addr()); err != nil {
					return fmt.Errorf("%w: %w", ErrHostRefused, err)
				}
				return nil
			}}
		return d.DialContext(ctx, network, addr)
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: more than %d redirects", ErrHostRefused, maxRedirects)
		}
		if err := g.CheckURL(req.URL); err != nil {
			return fmt.Errorf("%w: redirected: %w", ErrHostRefused, err)
		}
		return nil
	}
	return c
}
