package guard

// Who may use the guard, and how much of it at once: the Host check
// against DNS rebinding, the token of the sensitive paths, the cap on
// requests in flight.

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctxkit/ctxkit/internal/httpserver"
)

// loopback says whether the guard only accepts connections from this
// machine: by Options.ListenAddr, else by the address the request came in
// on (unknown: no).
func (g *Guard) loopback(r *http.Request) bool {
	if g.opts.ListenAddr != "" {
		return httpserver.Loopback(g.opts.ListenAddr)
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return httpserver.Loopback(a.String())
	}
	return false
}

// hostAllowed applies Ollama's DNS-rebinding protection, which the guard
// would defeat by rewriting Host to the backend's: on a loopback address
// a request is served only when its Host names this machine (see
// allowedHost); else 403. On another address every Host is served, as
// Ollama does: other machines reach it by names the guard cannot know.
func (g *Guard) hostAllowed(w http.ResponseWriter, r *http.Request) bool {
	if !g.loopback(r) || g.allowedHost(r.Host) {
		return true
	}
	n := g.stats.hostRefused.Add(1)
	if g.hostLog.allow() {
		g.log.Warn("refused a request for a Host this guard does not answer to (DNS rebinding?); --allowed-hosts adds one",
			"host", r.Host, "path", r.URL.Path, "remote", r.RemoteAddr, "refused_so_far", n)
	}
	writeError(w, http.StatusForbidden, "host_not_allowed",
		fmt.Sprintf("Host %q is not a name of this machine, and the guard listens on a loopback address: refused as Ollama refuses it (DNS rebinding); behind a reverse proxy, start the guard with --allowed-hosts", r.Host), nil)
	return false
}

// allowedHost says whether a Host header (host or host:port) names this
// machine, by the facts of Ollama v0.17.4: an IP that is loopback,
// private, unspecified or one of this machine's; no name, localhost, the
// machine's hostname, or a name under .localhost, .local or .internal;
// and, the guard's own addition, Options.AllowedHosts.
func (g *Guard) allowedHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || localIP(ip) {
			return true
		}
	} else {
		if host == "" || host == "localhost" || (g.hostname != "" && host == g.hostname) {
			return true
		}
		for _, tld := range []string{".localhost", ".local", ".internal"} {
			if strings.HasSuffix(host, tld) {
				return true
			}
		}
	}
	for _, a := range g.opts.AllowedHosts {
		a = strings.ToLower(strings.TrimSpace(a))
		if h, _, err := net.SplitHostPort(a); err == nil {
			a = h
		}
		switch {
		case a == "*", a == host:
			return true
		case strings.HasPrefix(a, ".") && strings.HasSuffix(host, a):
			return true
		}
	}
	return false
}

// localIP says whether ip is an address of one of this machine's
// interfaces.
func localIP(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if own, ok := netip.AddrFromSlice(n.IP); ok && own.Unmap() == ip.WithZone("") {
				return true
			}
		}
	}
	return false
}

// authorized guards the paths that read what clients sent or change the
// guard's state (GET /ctxkit/evicted/ID, POST /ctxkit/runtime): with
// Options.Token they need it as a bearer token; without one they are
// served on a loopback address only. It answers the client itself (401
// or 403) when not.
func (g *Guard) authorized(w http.ResponseWriter, r *http.Request) bool {
	if g.opts.Token == "" {
		if g.loopback(r) {
			return true
		}
		writeError(w, http.StatusForbidden, "token_required",
			r.URL.Path+" is served to other machines only with a token: start the guard with --token-env NAME (a variable holding the token) and send Authorization: Bearer <token>", nil)
		return false
	}
	if tok, ok := httpserver.Bearer(r); ok && httpserver.TokenMatches(tok, g.opts.Token) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ctxkit guard"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", r.URL.Path+" needs Authorization: Bearer <the guard's token> (--token-env)", nil)
	return false
}

// acquireSlot takes one of Options.MaxConcurrent slots for a request, or
// answers 503 with Retry-After and returns false when all are taken.
func (g *Guard) acquireSlot(w http.ResponseWriter) (func(), bool) {
	if g.slots == nil {
		return func() {}, true
	}
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, true
	default:
	}
	n := g.stats.overloaded.Add(1)
	if g.overloadLog.allow() {
		g.log.Warn("refused a request: the guard has MaxConcurrent requests in flight (--max-concurrent)", "max_concurrent", cap(g.slots), "refused_so_far", n)
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterOverloaded))
	writeError(w, http.StatusServiceUnavailable, "overloaded",
		fmt.Sprintf("the guard has %d requests in flight, its limit (--max-concurrent); retry shortly", cap(g.slots)), nil,
		"max_concurrent", cap(g.slots), "retry_after_seconds", retryAfterOverloaded)
	return nil, false
}

// retryAfterOverloaded is the Retry-After of an overloaded answer, in
// seconds: requests in flight are generations, which end in seconds.
const retryAfterOverloaded = 1

// logLimit lets one WARN of a kind through per second: refusals come in
// floods, and each is counted anyway.
type logLimit struct{ last atomic.Int64 }

func (l *logLimit) allow() bool {
	now := time.Now().Unix()
	last := l.last.Load()
	return now != last && l.last.CompareAndSwap(last, now)
}
