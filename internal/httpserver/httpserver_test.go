package httpserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxkit/ctxkit/internal/httpserver/httpservertest"
)

// start runs a Server for h with opts (Addr 127.0.0.1:0) and returns it
// with stop, which ends Run and returns its error.
func start(t *testing.T, h http.Handler, opts Options) (*Server, func() error) {
	t.Helper()
	opts.Addr, opts.Handler = "127.0.0.1:0", h
	s, err := Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	var runErr error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			runErr = <-done
		}
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return s, stop
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "127.1.2.3:80": true, "[::1]:80": true, "localhost:8000": true,
		"0.0.0.0:80": false, ":8000": false, "10.0.0.1:80": false, "[::]:80": false, "example.com:80": false,
		"127.0.0.1": false, "": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v", addr, got)
		}
		err := CheckAddr(addr, false)
		if (err == nil) != want || (err != nil && (!errors.Is(err, ErrNotLoopback) || !strings.HasPrefix(err.Error(), addr+" "))) {
			t.Errorf("CheckAddr(%q, false) = %v", addr, err)
		}
		if err := CheckAddr(addr, true); err != nil {
			t.Errorf("CheckAddr(%q, true) = %v", addr, err)
		}
	}
}

func TestBodyDeadline(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		n, rate int64
		wait    time.Duration
		want    time.Duration
	}{
		{0, 1000, 30 * time.Second, 30 * time.Second},
		{1000, 1000, 30 * time.Second, 31 * time.Second},
		{1500, 1000, time.Second, 2500 * time.Millisecond},
		{1, 3, 0, 333333333},
		{256 << 20, 128 << 10, 30 * time.Second, 2078 * time.Second},
		{1 << 40, 128 << 10, 0, 8388608 * time.Second}, // a terabyte passed through: no overflow
	} {
		if got := bodyDeadline(start, tc.n, tc.wait, tc.rate).Sub(start); got != tc.want {
			t.Errorf("%d bytes at %d/s after %v: %v, want %v", tc.n, tc.rate, tc.wait, got, tc.want)
		}
	}
}

// TestBodyThatNeverArrives sends requests whose body stops coming: the
// server closes the connection, whether the handler reads the body,
// closes it, or answers without touching it (as before authentication).
func TestBodyThatNeverArrives(t *testing.T) {
	handlers := map[string]http.HandlerFunc{
		"ignores": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		},
		"reads": func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.ReadAll(r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
			}
		},
		"closes": func(w http.ResponseWriter, r *http.Request) {
			r.Body.Close()
		},
	}
	requests := map[string]string{
		"no body":            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
		"part of the body":   "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789",
		"chunked, stalled":   "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		"expects continue":   "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n",
		"second on the conn": "GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
	}
	for hname, h := range handlers {
		s, _ := start(t, h, Options{Limits: Limits{BodyWait: 200 * time.Millisecond}})
		for rname, raw := range requests {
			t.Run(hname+"/"+rname, func(t *testing.T) {
				t.Parallel()
				httpservertest.ReadUntilClosed(t, s.Addr().String(), raw)
			})
		}
	}
}

// TestBodyReadAfterAWait: the bound starts with the handler's first read,
// so a handler may wait before reading (a queue) and still get the body.
func TestBodyReadAfterAWait(t *testing.T) {
	const wait = 100 * time.Millisecond
	s, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * wait)
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %v", b, err)
	}), Options{Limits: Limits{BodyWait: wait}})
	resp, err := http.Post(s.URL(), "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "payload <nil>" {
		t.Errorf("got %q", b)
	}
}

// TestStreamsOutliveTheBodyBound: a response may stream for longer than
// the body bound, after a request without a body (an MCP event stream) or
// with one read to its end (a chat whose tokens stream back), over one
// connection reused for both.
func TestStreamsOutliveTheBodyBound(t *testing.T) {
	const wait = 50 * time.Millisecond
	s, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc := http.NewResponseController(w)
		for i := range 4 {
			select {
			case <-r.Context().Done():
				fmt.Fprintf(w, "cancelled: %v\n", context.Cause(r.Context()))
				return
			case <-time.After(2 * wait):
			}
			fmt.Fprintf(w, "event %d\n", i)
			if err := rc.Flush(); err != nil {
				t.Error(err)
			}
		}
	}), Options{Limits: Limits{BodyWait: wait}})
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	want := "event 0\nevent 1\nevent 2\nevent 3\n"
	for _, body := range []io.Reader{nil, strings.NewReader(`{"stream":true}`)} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL(), body)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != want {
			t.Errorf("body %v: %q %v", body != nil, got, err)
		}
	}
}

// TestRunWaitsForRequestsInFlight: once its context ends, Run stops
// accepting connections but returns only after the request in flight.
func TestRunWaitsForRequestsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s, stop := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		fmt.Fprint(w, "finished")
	}), Options{Grace: httpservertest.Patience})
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get(s.URL())
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answer <- string(b)
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	httpservertest.WaitRefused(t, s.Addr().String())
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	if got := <-answer; got != "finished" {
		t.Errorf("the request in flight got %q", got)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestRunCancelsAfterTheGrace: requests still running when the grace is
// over are cancelled, and Run returns once they have returned.
func TestRunCancelsAfterTheGrace(t *testing.T) {
	entered, returned := make(chan struct{}), make(chan error, 1)
	s, stop := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-r.Context().Done():
			returned <- nil
		case <-time.After(httpservertest.Patience):
			returned <- errors.New("not cancelled")
		}
	}), Options{Grace: 10 * time.Millisecond})
	go func() {
		if resp, err := http.Get(s.URL()); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	select {
	case err := <-returned:
		if err != nil {
			t.Error(err)
		}
	default:
		t.Error("Run returned before the handler")
	}
}

// TestTLS serves HTTPS with HTTP/2, where the body bound holds per stream.
func TestTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	s, _ := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %v", r.Proto, err != nil)
	}), Options{TLSCert: cert, TLSKey: key, Limits: Limits{BodyWait: 100 * time.Millisecond}})
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") {
		t.Errorf("URL %s", s.URL())
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}, Timeout: httpservertest.Patience}
	pr, pw := io.Pipe() // a body that never comes
	defer pw.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL(), pr)
	req.ContentLength = 100
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "HTTP/2.0 true" {
		t.Errorf("got %q, want the read to fail over HTTP/2", b)
	}
	if _, err := Listen(Options{Addr: "127.0.0.1:0", Handler: http.NotFoundHandler(), TLSCert: cert}); err == nil || !strings.Contains(err.Error(), "load TLS certificate") {
		t.Errorf("a certificate without its key: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool trusting it.
func selfSigned(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return cert, key, pool
}
