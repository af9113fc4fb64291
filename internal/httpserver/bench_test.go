package httpserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkPost posts bodies of 4 KiB and 1 MiB over one keep-alive
// connection to a handler that reads them, through a plain http.Server
// (the setup before this package) and through Server: the difference is
// the cost of the body deadline and the request count.
func BenchmarkPost(b *testing.B) {
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			b.Error(err)
		}
	})
	plain := func(b *testing.B) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := &http.Server{Handler: read, ReadHeaderTimeout: DefaultReadHeader, IdleTimeout: DefaultIdle}
		go func() { _ = srv.Serve(ln) }()
		b.Cleanup(func() { _ = srv.Close() })
		return "http://" + ln.Addr().String()
	}
	ours := func(b *testing.B) string {
		s, err := Listen(Options{Addr: "127.0.0.1:0", Handler: read})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		b.Cleanup(func() { cancel(); <-done })
		return s.URL()
	}
	for _, size := range []int{4 << 10, 1 << 20} {
		body := bytes.Repeat([]byte("x"), size)
		for name, start := range map[string]func(*testing.B) string{"plain": plain, "httpserver": ours} {
			b.Run(fmt.Sprintf("server=%s/size=%dKiB", name, size>>10), func(b *testing.B) {
				url := start(b)
				c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					resp, err := c.Post(url, "application/octet-stream", bytes.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	}
}
