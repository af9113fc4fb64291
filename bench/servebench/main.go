// Command servebench measures `ctxkit serve` as a whole process under
// concurrent load, for BENCHMARKS.md: -clients callers for -duration, each
// call a semantic query or an episode write (one in four), over the REST
// API on loopback, as an agent with its token. It prints, per kind, the
// calls made, calls per second, p50 and p99 latency, and errors, which must
// be 0.
//
// It sets everything up itself in a fresh $CTXKIT_HOME and project, on the
// store -store names (default: the SQLite default; a postgres:// URL must
// name an empty schema): an agent, a semantic vault of -docs generated
// markdown files (indexed; uploaded with --from on a hosting store), an
// episodic vault, both restricted to the agent; then it starts -instances
// servers on that store and waits for their /healthz. Client c calls
// instance c mod -instances, as a balancer spreading connections would.
//
//	go build -o /tmp/ctxkit ./cmd/ctxkit && go run ./bench/servebench -ctxkit /tmp/ctxkit
//	go run ./bench/servebench -ctxkit /tmp/ctxkit -store 'postgres://postgres@127.0.0.1/test?search_path=bench' -instances 3
package main

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/ctxkit/ctxkit/internal/benchdata"
)

func main() {
	ctxkit := flag.String("ctxkit", "", "path to the ctxkit binary to measure")
	clients := flag.Int("clients", 32, "concurrent callers")
	duration := flag.Duration("duration", 30*time.Second, "how long to load the server")
	docs := flag.Int("docs", 1000, "markdown files in the semantic vault")
	storeURL := flag.String("store", "", "the store's URL (default: SQLite in the fresh $CTXKIT_HOME)")
	instances := flag.Int("instances", 1, "ctxkit serve processes on the one store")
	flag.Parse()
	if *ctxkit == "" {
		log.Fatal("-ctxkit is required")
	}
	root, err := os.MkdirTemp("", "servebench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	// The default backend: the setup commands and the server are separate
	// processes, which share it.
	env := append(os.Environ(), "CTXKIT_HOME="+filepath.Join(root, "home"), "CTXKIT_STORE="+*storeURL)
	project := filepath.Join(root, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		log.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := exec.Command(*ctxkit, args...)
		cmd.Env, cmd.Dir = env, project
		out, err := cmd.Output()
		if err != nil {
			log.Fatalf("ctxkit %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	token := lastLine(run("agent", "create", "bench"))
	run("vault", "init", "kb")
	run("vault", "init", "memory", "--type", "episodic")
	run("vault", "attach", "kb", "bench")
	run("vault", "attach", "memory", "bench")
	var text strings.Builder
	if err := benchdata.WriteText(&text, *docs*2000); err != nil {
		log.Fatal(err)
	}
	words := strings.Fields(text.String())
	kb := filepath.Join(project, ".ctxkit", "vaults", "kb")
	hosted := false
	if _, err := os.Stat(kb); err != nil { // no folder: the store hosts the vault
		hosted, kb = true, filepath.Join(root, "upload")
		if err := os.MkdirAll(kb, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	for i := range *docs {
		at := (i * 300) % (len(words) - 300)
		body := fmt.Sprintf("# Note %d\n\n## Part one\n\n%s\n\n## Part two\n\n%s\n", i, strings.Join(words[at:at+150], " "), strings.Join(words[at+150:at+300], " "))
		if err := os.WriteFile(filepath.Join(kb, fmt.Sprintf("note%05d.md", i)), []byte(body), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if hosted {
		run("vault", "index", "kb", "--from", kb)
	} else {
		run("vault", "index", "kb")
	}

	var bases []string
	for range *instances {
		addr := harness.FreeAddr()
		srv := exec.Command(*ctxkit, "serve", "--addr", addr)
		srv.Env, srv.Dir, srv.Stderr = env, project, os.Stderr
		if err := srv.Start(); err != nil {
			log.Fatal(err)
		}
		defer func() {
			srv.Process.Signal(os.Interrupt)
			srv.Wait()
		}()
		bases = append(bases, "http://"+addr)
	}
	for _, base := range bases {
		harness.WaitOK(base + "/healthz")
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}
	type sample struct {
		kind string
		lat  time.Duration
		err  error
	}
	var mu sync.Mutex
	var samples []sample
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for c := range *clients {
		base := bases[c%len(bases)]
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				kind, path, body := "query", "/v1/vaults/kb/query", fmt.Sprintf(`{"query": %q, "n_results": 5}`, words[(c*7919+i*104729)%len(words)]+" "+words[(c*31+i*17)%len(words)])
				if i%4 == 3 {
					kind, path, body = "write-episode", "/v1/vaults/memory/episodes", fmt.Sprintf(`{"content": "client %d noted fact %d about %s", "entities": ["client-%d"]}`, c, i, words[i%len(words)], c)
				}
				t0 := time.Now()
				err := call(ctx, client, base+path, token, body)
				if ctx.Err() != nil {
					return // cut off by the end of the run, not an error
				}
				mu.Lock()
				samples = append(samples, sample{kind, time.Since(t0), err})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	storeName := *storeURL
	if storeName == "" {
		storeName = "the default SQLite"
	}
	fmt.Printf("ctxkit serve ×%d on %s, %d clients for %s, %d documents indexed\n", len(bases), storeName, *clients, elapsed.Round(time.Second), *docs)
	for _, kind := range []string{"query", "write-episode"} {
		var lat []time.Duration
		errs := 0
		var first error
		for _, s := range samples {
			if s.kind != kind {
				continue
			}
			if s.err != nil {
				errs++
				if first == nil {
					first = s.err
				}
				continue
			}
			lat = append(lat, s.lat)
		}
		slices.Sort(lat)
		if len(lat) == 0 {
			fmt.Printf("%-14s no successful calls; errors %d (%v)\n", kind, errs, first)
			continue
		}
		fmt.Printf("%-14s %7d calls  %7.0f/s  p50 %6.2f ms  p99 %6.2f ms  errors %d\n", kind, len(lat)+errs,
			float64(len(lat)+errs)/elapsed.Seconds(), harness.Ms(lat[len(lat)/2]), harness.Ms(lat[(len(lat)-1)*99/100]), errs)
		if first != nil {
			fmt.Printf("  first error: %v\n", first)
		}
	}
}

func call(ctx context.Context, c *http.Client, url, token, body string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s: %d %s", url, res.StatusCode, b)
	}
	if !json.Valid(b) {
		return fmt.Errorf("%s: not JSON", url)
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		for _, f := range strings.Fields(lines[i]) {
			if strings.HasPrefix(f, "ctxk_") {
				return f
			}
		}
	}
	log.Fatalf("no token in %q", s)
	return ""
}
