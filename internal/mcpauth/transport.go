package mcpauth

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Transport returns an http.RoundTripper for transports without an OAuth
// hook (the legacy SSE transport: mcp.SSEClientTransport.HTTPClient). It
// adds the stored, refreshed bearer token to every request; on a 401 (or a
// 403 asking for more scope) it runs Authorize, the browser flow if need be,
// and retries the request once with the new token. A request whose body
// cannot be replayed (no GetBody) is not retried: its 401 is returned.
// base nil is http.DefaultTransport.
func (h *Handler) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &roundTripper{h: h, base: base}
}

type roundTripper struct {
	h    *Handler
	base http.RoundTripper
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.h.sameOrigin(req.URL) {
		// A redirect or an SSE endpoint on another host gets no token.
		return t.base.RoundTrip(req)
	}
	first, err := t.withToken(req, req.Body)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(first)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if !replayable {
		return resp, nil
	}
	if err := t.h.Authorize(req.Context(), first, resp); err != nil {
		return nil, err
	}
	body := req.Body
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return nil, fmt.Errorf("replay request body: %w", err)
		}
	}
	retry, err := t.withToken(req, body)
	if err != nil {
		return nil, err
	}
	return t.base.RoundTrip(retry)
}

// withToken returns a copy of req with body and the current bearer token,
// if there is one. A refused refresh (invalid_grant) sends the request
// without a token so that the server's 401 starts a new flow.
func (t *roundTripper) withToken(req *http.Request, body io.ReadCloser) (*http.Request, error) {
	r := req.Clone(req.Context())
	r.Body = body
	ts, err := t.h.TokenSource(req.Context())
	if err != nil || ts == nil {
		return r, err
	}
	tok, err := ts.Token()
	if err != nil {
		if isInvalidGrant(err) {
			return r, nil
		}
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return r, nil
}

// sameOrigin reports whether u has the MCP server's scheme, host and port.
func (h *Handler) sameOrigin(u *url.URL) bool {
	server, err := url.Parse(h.cfg.ServerURL)
	return err == nil && strings.EqualFold(u.Scheme, server.Scheme) && strings.EqualFold(u.Host, server.Host)
}
