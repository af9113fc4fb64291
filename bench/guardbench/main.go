// Command guardbench measures `ctxkit guard` as a whole process, for
// BENCHMARKS.md: -clients callers for -duration per workload, each
// against Ollama's emulator (internal/llmemu, served by this process on
// loopback) directly and through a `ctxkit guard` process in front of it.
// It prints, per workload and path, calls per second, p50 and p99 latency
// (time to first byte for streams) and errors, which must be 0, and the
// guard process's peak resident memory.
//
// Workloads:
//
//   - fits: a 12-message chat that fits the window, not streamed;
//
//   - stream: the same, streamed (latency is time to the first chunk);
//
//   - overflow: a 400-message agent history (about 150k tokens) into an
//     8,192-token window; directly Ollama cuts it silently, through the
//     guard it is compacted (every call is the same conversation, so after
//     the first the guard replays its plan, as on a real agent's later
//     turns).
//
//     go build -o /tmp/ctxkit ./cmd/ctxkit && go run ./bench/guardbench -ctxkit /tmp/ctxkit
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/bench/internal/harness"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

const model = "llama3.2"

type msg = map[string]any

func main() {
	ctxkit := flag.String("ctxkit", "", "path to the ctxkit binary to measure")
	clients := flag.Int("clients", 8, "concurrent callers")
	duration := flag.Duration("duration", 10*time.Second, "how long each workload runs on each path")
	flag.Parse()
	if *ctxkit == "" {
		log.Fatal("-ctxkit is required")
	}

	emuAddr := harness.FreeAddr()
	emu := &http.Server{Addr: emuAddr, Handler: llmemu.NewOllama(llmemu.OllamaOptions{NumCtx: 8192}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := emu.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	defer emu.Close()

	root, err := os.MkdirTemp("", "guardbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	guardAddr := harness.FreeAddr()
	g := exec.Command(*ctxkit, "guard", "--listen", guardAddr, "--ollama", "http://"+emuAddr, "--store", filepath.Join(root, "ctxkit.db"))
	g.Env = append(os.Environ(), "CTXKIT_HOME="+filepath.Join(root, "home"))
	g.Stderr = io.Discard
	if err := g.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() {
		_ = g.Process.Signal(os.Interrupt)
		_ = g.Wait()
	}()
	harness.WaitOK("http://" + guardAddr + "/ctxkit/health")

	small := chat(5, 20)
	big := chat(199, 260)
	workloads := []struct {
		name   string
		body   msg
		stream bool
	}{
		{"fits", msg{"model": model, "stream": false, "messages": small}, false},
		{"stream", msg{"model": model, "stream": true, "messages": small}, true},
		{"overflow", msg{"model": model, "stream": false, "messages": big}, false},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}
	fmt.Printf("ctxkit guard in front of the Ollama emulator, %d clients, %s per workload and path\n", *clients, *duration)
	for _, w := range workloads {
		body, err := json.Marshal(w.body)
		if err != nil {
			log.Fatal(err)
		}
		for _, path := range []struct{ name, base string }{{"direct", "http://" + emuAddr}, {"guard", "http://" + guardAddr}} {
			r := load(client, path.base+"/api/chat", body, w.stream, *clients, *duration)
			fmt.Printf("%-9s %-7s %6d calls %8.0f/s  p50 %7.2f ms  p99 %7.2f ms  errors %d  (%d KB a request)\n",
				w.name, path.name, r.calls, r.rate, harness.Ms(r.p50), harness.Ms(r.p99), r.errors, len(body)/1024)
			if r.firstErr != nil {
				fmt.Printf("  first error: %v\n", r.firstErr)
			}
		}
	}
	fmt.Printf("guard peak RSS %d MB\n", harness.PeakRSS(g.Process.Pid)>>20)
}

// chat is a conversation of a system prompt, a task, rounds of tool calls
// with outputs of words filler words, and a question.
func chat(rounds, words int) []msg {
	msgs := []msg{{"role": "system", "content": "You are a careful agent."}, {"role": "user", "content": "Your task. SECRET: ANANAS-7734. Remember it."}}
	for i := range rounds {
		msgs = append(msgs,
			msg{"role": "assistant", "content": "", "tool_calls": []any{msg{"function": msg{"name": "read_file", "arguments": msg{"path": fmt.Sprintf("f%d.txt", i)}}}}},
			msg{"role": "tool", "tool_name": "read_file", "content": fmt.Sprintf("file %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", words/5))})
	}
	return append(msgs, msg{"role": "user", "content": "What is the secret?"})
}

type result struct {
	calls, errors int
	rate          float64
	p50, p99      time.Duration
	firstErr      error
}

// load posts body to url from clients goroutines for d and measures each
// call to its end, or to the first streamed chunk.
func load(c *http.Client, url string, body []byte, stream bool, clients int, d time.Duration) result {
	var mu sync.Mutex
	var lat []time.Duration
	var res result
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				took, err := post(ctx, c, url, body, stream, t0)
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				if err != nil {
					res.errors++
					if res.firstErr == nil {
						res.firstErr = err
					}
				} else {
					lat = append(lat, took)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	res.calls = len(lat) + res.errors
	res.rate = float64(res.calls) / time.Since(start).Seconds()
	if len(lat) > 0 {
		res.p50, res.p99 = lat[len(lat)/2], lat[(len(lat)-1)*99/100]
	}
	return res
}

// post sends one call and returns its latency: to the end of the body, or
// for a stream to its first line (the rest is read and checked too).
func post(ctx context.Context, c *http.Client, url string, body []byte, stream bool, t0 time.Time) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadBytes('\n')
	took := time.Since(t0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	rest, err := io.ReadAll(br)
	if err != nil {
		return 0, err
	}
	if !stream {
		took = time.Since(t0)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%d %s", resp.StatusCode, bytes.TrimSpace(append(first, rest...)))
	}
	return took, nil
}
