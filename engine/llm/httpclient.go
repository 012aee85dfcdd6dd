package llm

import "net/http"

// GuardedHTTPClient is the client model calls use, with g checking every
// request, redirect and connection, for other calls that must obey the
// worker's host rule (MCP servers over HTTP).
func GuardedHTTPClient(g Guard) *http.Client { return guardedClient(g) }
