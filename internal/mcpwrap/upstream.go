package mcpwrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transports a URL upstream may be reached with.
const (
	TransportAuto = "auto" // streamable HTTP, falling back to SSE
	TransportHTTP = "http" // streamable HTTP only
	TransportSSE  = "sse"  // the legacy HTTP+SSE transport only
)

// Upstream describes the one server a Proxy wraps: a command to run (stdio)
// or a URL.
type Upstream struct {
	// Name names the server in errors, logs and stored results.
	Name string
	// Command and its arguments start a stdio server; empty for a URL.
	Command []string
	// URL is the endpoint of a remote server.
	URL string
	// Transport is TransportAuto (default), TransportHTTP or TransportSSE.
	Transport string
	// Headers are sent with every HTTP request, as "Name: value"; values
	// may reference environment variables as ${VAR}, expanded when the
	// Proxy starts and never written anywhere expanded.
	Headers []string
	// HeaderEnv are headers whose whole value is an environment variable,
	// as "Name=VAR": for clients that expand ${VAR} in arguments
	// themselves, which would put a secret on the command line.
	HeaderEnv []string
	// Stderr receives a stdio server's standard error (nil discards it).
	Stderr io.Writer
	// OAuth, when set, authorizes requests to a URL upstream that asks for
	// it (a 401 with WWW-Authenticate).
	OAuth OAuth
	// HTTPClient is the client for URL upstreams; nil means a default one.
	HTTPClient *http.Client
}

// OAuth authorizes a URL upstream: as the streamable transport's handler,
// and as an HTTP transport for the SSE one, which has no such hook.
type OAuth interface {
	auth.OAuthHandler
	Transport(base http.RoundTripper) http.RoundTripper
}

// Validate reports what is wrong with u, before anything is started.
func (u *Upstream) Validate() error {
	switch {
	case len(u.Command) == 0 && u.URL == "":
		return errors.New("nothing to wrap: give a URL or a command after --")
	case len(u.Command) > 0 && u.URL != "":
		return errors.New("give either a URL or a command, not both")
	}
	switch u.Transport {
	case "", TransportAuto, TransportHTTP, TransportSSE:
	default:
		return fmt.Errorf("unknown transport %q (want auto, http or sse)", u.Transport)
	}
	if u.URL != "" && !strings.HasPrefix(u.URL, "http://") && !strings.HasPrefix(u.URL, "https://") {
		return fmt.Errorf("URL %q: want http:// or https://", u.URL)
	}
	return nil
}

// describe names the upstream for messages: its name and what it runs.
// A URL is shown without its query and user info, where keys often are.
func (u *Upstream) describe() string {
	what := strings.Join(u.Command, " ")
	if u.URL != "" {
		what = redactURL(u.URL)
	}
	return fmt.Sprintf("server %q (%s)", u.Name, what)
}

// scrub hides the URL's credentials (query and password) in err's message,
// which HTTP errors fill with the URL they failed on.
func (u *Upstream) scrub(err error) error {
	if err == nil || u.URL == "" {
		return err
	}
	msg := err.Error()
	parsed, perr := url.Parse(u.URL)
	if perr != nil {
		return err
	}
	secrets := []string{parsed.RawQuery, parsed.Query().Encode()}
	if p, ok := parsed.User.Password(); ok {
		secrets = append(secrets, p, url.QueryEscape(p))
	}
	changed := msg
	for _, sec := range secrets {
		if sec != "" {
			changed = strings.ReplaceAll(changed, sec, "redacted")
		}
	}
	if changed == msg {
		return err
	}
	return &scrubbed{msg: changed, err: err}
}

// scrubbed is an error whose message had credentials removed; errors.Is
// and errors.As still see the original.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// redactURL returns rawURL without credentials: user info and query values
// are replaced by "redacted".
func redactURL(rawURL string) string {
	parsed, err := url.Parse(rawURL)
	if err != nil {
		return "an unparsable URL"
	}
	if parsed.User != nil {
		parsed.User = url.User("redacted")
	}
	if parsed.RawQuery != "" {
		q := parsed.Query()
		for k := range q {
			q[k] = []string{"redacted"}
		}
		parsed.RawQuery = q.Encode()
	}
	parsed.Fragment = ""
	return parsed.String()
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ParseHeaders turns "Name: value" strings into a header, expanding ${VAR}
// from lookup. A reference to an unset variable is an error naming the
// variable and the header, never the value.
func ParseHeaders(lines []string, lookup func(string) (string, bool)) (http.Header, error) {
	h := http.Header{}
	for _, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
			return nil, fmt.Errorf("header %q: want 'Name: value'", redactHeader(line))
		}
		var missing []string
		value = envRef.ReplaceAllStringFunc(value, func(ref string) string {
			v, ok := lookup(ref[2 : len(ref)-1])
			if !ok {
				missing = append(missing, ref)
			}
			return v
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("header %s references %s, which is not set in the environment", name, strings.Join(missing, ", "))
		}
		value = strings.TrimSpace(value)
		if strings.ContainsAny(value, "\r\n") {
			return nil, fmt.Errorf("header %s: the value holds a line break", name)
		}
		h.Add(name, value)
	}
	return h, nil
}

// parseHeaderEnv adds to h the headers of lines ("Name=VAR"), each valued
// from the environment variable it names.
func parseHeaderEnv(h http.Header, lines []string, lookup func(string) (string, bool)) error {
	for _, line := range lines {
		name, variable, ok := strings.Cut(line, "=")
		name, variable = strings.TrimSpace(name), strings.TrimSpace(variable)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n:") || !envName.MatchString(variable) {
			return fmt.Errorf("header-env %q: want 'Name=VARIABLE'", line)
		}
		value, ok := lookup(variable)
		if !ok {
			return fmt.Errorf("header %s takes its value from %s, which is not set in the environment", name, variable)
		}
		if strings.ContainsAny(value, "\r\n") {
			return fmt.Errorf("header %s: the value holds a line break", name)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// redactHeader keeps only a header's name, for messages.
func redactHeader(line string) string {
	if name, _, ok := strings.Cut(line, ":"); ok {
		return name + ": …"
	}
	if len(line) > 20 {
		return line[:20] + "…"
	}
	return line
}

// headerTransport adds fixed headers to every request to the upstream's
// origin, and to no other: a redirect or an SSE endpoint on another host
// must not receive the user's credentials.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
	origin *url.URL
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sameOrigin(req.URL, t.origin) {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, vs := range t.header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

// lifetimeTransport connects its transport with the proxy's lifetime
// context rather than the handshake's: the SSE transport binds its stream to
// the context it is connected with, and a handshake timeout must not end it.
type lifetimeTransport struct {
	mcp.Transport
	ctx context.Context
}

func (t lifetimeTransport) Connect(context.Context) (mcp.Connection, error) {
	return t.Transport.Connect(t.ctx)
}

// handshakeTimeout bounds starting an upstream and its initialize exchange.
const handshakeTimeout = 60 * time.Second

// signInTimeout is the time added to the handshake of an upstream that may
// ask for an OAuth sign-in in a browser.
const signInTimeout = 5 * time.Minute

// backoff bounds how often a failing upstream is restarted.
const (
	backoffMin = time.Second
	backoffMax = 30 * time.Second
	// shortLife is how long an upstream must live for its exit to count as
	// a crash to restart at once rather than a failure to back off from.
	shortLife = 10 * time.Second
)

// link keeps the connection to the upstream: it connects on first use,
// notices when the connection ends, reconnects on the next use, and backs
// off while the upstream keeps failing.
type link struct {
	up        *Upstream
	newClient func() *mcp.Client
	// onResult offloads a large tools/call result from its wire form (stdio).
	onResult resultHook
	header   http.Header
	logger   *slog.Logger
	life     context.Context
	now      func() time.Time
	// onConnect runs after every successful connection, with the lock
	// released, to mirror the upstream's features.
	onConnect func(*mcp.ClientSession)

	mu        sync.Mutex
	closed    bool
	cs        *mcp.ClientSession
	client    *mcp.Client // cs's client
	since     time.Time
	failures  int
	retryAt   time.Time
	lastErr   error
	connected chan struct{} // closed when a connection attempt ends
}

// errUnavailable marks an upstream that cannot be reached now.
var errUnavailable = errors.New("unavailable")

// errClosed is the error of every use of a link after close.
var errClosed = errors.New("the wrapper is shutting down")

// session returns the live connection, connecting first if there is none.
func (l *link) session(ctx context.Context) (*mcp.ClientSession, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", l.up.describe(), errClosed)
	}
	if l.cs != nil {
		cs := l.cs
		l.mu.Unlock()
		return cs, nil
	}
	if wait := l.retryAt.Sub(l.now()); wait > 0 {
		err := l.lastErr
		l.mu.Unlock()
		return nil, fmt.Errorf("%s is %w (%v); next attempt in %s", l.up.describe(), errUnavailable, err, wait.Round(time.Second))
	}
	if l.connected != nil { // another caller is connecting: wait for it
		ch := l.connected
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return l.session(ctx)
	}
	ch := make(chan struct{})
	l.connected = ch
	l.mu.Unlock()

	client := l.newClient()
	cs, err := l.connect(client)

	l.mu.Lock()
	l.connected = nil
	close(ch)
	if err != nil {
		err = l.up.scrub(err)
		l.failures++
		l.lastErr = err
		l.retryAt = l.now().Add(backoffDelay(l.failures))
		l.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", l.up.describe(), err)
	}
	if l.closed { // closed while connecting: this connection is not wanted
		l.mu.Unlock()
		_ = cs.Close()
		return nil, fmt.Errorf("%s: %w", l.up.describe(), errClosed)
	}
	l.cs, l.client, l.since, l.lastErr = cs, client, l.now(), nil
	l.mu.Unlock()
	go l.watch(cs)
	if l.onConnect != nil {
		l.onConnect(cs)
	}
	return cs, nil
}

func backoffDelay(failures int) time.Duration {
	if failures <= 1 {
		return 0 // the first failure is retried on the next call
	}
	d := backoffMin << min(failures-2, 5)
	return min(d, backoffMax)
}

// watch notices the end of a connection, so the next call reconnects.
func (l *link) watch(cs *mcp.ClientSession) {
	err := cs.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cs != cs {
		return
	}
	l.cs = nil
	if err == nil {
		err = errors.New("the server closed the connection")
	}
	l.lastErr = fmt.Errorf("the server stopped: %w", l.up.scrub(err))
	if l.now().Sub(l.since) < shortLife {
		l.failures++
		l.retryAt = l.now().Add(backoffDelay(l.failures))
	} else {
		l.failures = 0
	}
}

// status reports the current connection, or the last error.
func (l *link) status() (*mcp.ClientSession, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cs, l.lastErr
}

// currentClient returns the client of the live connection, if any.
func (l *link) currentClient() *mcp.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cs == nil {
		return nil
	}
	return l.client
}

func (l *link) close() {
	l.mu.Lock()
	cs := l.cs
	l.cs, l.closed = nil, true
	l.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

// connect starts or dials the upstream and runs the handshake.
func (l *link) connect(client *mcp.Client) (*mcp.ClientSession, error) {
	timeout := handshakeTimeout
	if l.up.OAuth != nil && l.up.URL != "" {
		timeout += signInTimeout // the handshake may wait for a person to sign in
	}
	ctx, cancel := context.WithTimeout(l.life, timeout)
	defer cancel()
	if len(l.up.Command) > 0 {
		cmd := exec.Command(l.up.Command[0], l.up.Command[1:]...)
		cmd.Stderr = l.up.Stderr
		cmd.Env = os.Environ()
		cs, err := client.Connect(ctx, &commandTransport{cmd: cmd, terminate: 2 * time.Second, onResult: l.onResult, logger: l.logger}, nil)
		if err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
		return cs, nil
	}
	hc := l.httpClient()
	switch l.up.Transport {
	case TransportSSE:
		return l.connectSSE(ctx, client, hc)
	case TransportHTTP:
		return l.connectStreamable(ctx, client, hc)
	}
	cs, err := l.connectStreamable(ctx, client, hc)
	if err == nil || ctx.Err() != nil {
		return cs, err
	}
	cs, sseErr := l.connectSSE(ctx, client, hc)
	if sseErr != nil {
		return nil, fmt.Errorf("%w (and over SSE: %v)", err, sseErr)
	}
	return cs, nil
}

func (l *link) connectStreamable(ctx context.Context, client *mcp.Client, hc *http.Client) (*mcp.ClientSession, error) {
	t := &mcp.StreamableClientTransport{Endpoint: l.up.URL, HTTPClient: hc, MaxEventSize: MaxMessageBytes}
	if l.up.OAuth != nil {
		t.OAuthHandler = l.up.OAuth
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect over streamable HTTP: %w", err)
	}
	return cs, nil
}

func (l *link) connectSSE(ctx context.Context, client *mcp.Client, hc *http.Client) (*mcp.ClientSession, error) {
	if l.up.OAuth != nil {
		c := *hc
		c.Transport = l.up.OAuth.Transport(c.Transport)
		hc = &c
	}
	t := lifetimeTransport{&mcp.SSEClientTransport{Endpoint: l.up.URL, HTTPClient: hc, MaxEventSize: MaxMessageBytes}, l.life}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect over SSE: %w", err)
	}
	return cs, nil
}

// httpClient is the client for one connection to a URL upstream: its
// responses pass through an interceptor (large results are stored from
// their bytes), and its requests to the upstream's origin carry the headers.
func (l *link) httpClient() *http.Client {
	c := http.Client{}
	if l.up.HTTPClient != nil {
		c = *l.up.HTTPClient
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	rt = &interceptTransport{base: rt, ic: &interceptor{onResult: l.onResult}}
	if len(l.header) > 0 {
		origin, err := url.Parse(l.up.URL)
		if err != nil {
			return &c // Validate refuses such URLs before this is reached
		}
		rt = &headerTransport{base: rt, header: l.header, origin: origin}
	}
	c.Transport = rt
	return &c
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}
