// Command guardmem measures the peak resident memory of a `ctxkit guard`
// process that relays one large chat, for BENCHMARKS.md: for each size and
// case it starts a fresh guard in front of Ollama's emulator
// (internal/llmemu, served by this process on loopback), posts one chat
// of that many megabytes to /api/chat, checks the answer, and prints the
// guard's peak RSS (VmHWM), its ratio to the body, and the ratio of what
// it adds to the peak of a guard that relayed one small chat (the Go
// runtime, SQLite and the HTTP server, about 26 MB).
//
// Cases:
//
//   - fits: the request's num_ctx holds the whole chat, so the guard
//     parses and counts it and sends it on as received;
//   - overflow: the window is 8,192 tokens, so the guard compacts the chat,
//     stores the evicted messages in its SQLite store and sends what is
//     left.
//
// The chat is an agent's history: a system prompt, a task, then rounds of
// a read_file call and its result (64 KB of log lines, with the quotes,
// tabs and newlines JSON escapes), and a question.
//
//	go build -o /tmp/ctxkit ./cmd/ctxkit && go run ./bench/guardmem -ctxkit /tmp/ctxkit
package main

import (
	"bytes"
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
	"strconv"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/bench/internal/harness"
	"github.com/ctxkit/ctxkit/internal/llmemu"
)

const model = "llama3.2"

type msg = map[string]any

func main() {
	ctxkit := flag.String("ctxkit", "", "path to the ctxkit binary to measure")
	sizes := flag.String("sizes", "13,99", "chat sizes in MB, comma-separated")
	cases := flag.String("cases", "fits,overflow", "cases to run: fits, overflow")
	storeURL := flag.String("store", "", "the guard's --store (default: a SQLite file in a temporary folder)")
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

	fmt.Println("ctxkit guard in front of the Ollama emulator, one chat a process")
	small, err := chatBody(0, "fits")
	if err != nil {
		log.Fatal(err)
	}
	idle, _, _, err := measure(*ctxkit, emuAddr, *storeURL, small, false)
	if err != nil {
		log.Fatalf("idle: %v", err)
	}
	fmt.Printf("a guard that relayed one small chat: peak RSS %d MB\n", idle>>20)
	for _, s := range strings.Split(*sizes, ",") {
		mb, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			log.Fatalf("-sizes: %v", err)
		}
		for _, c := range strings.Split(*cases, ",") {
			c = strings.TrimSpace(c)
			body, err := chatBody(mb<<20, c)
			if err != nil {
				log.Fatal(err)
			}
			peak, took, status, err := measure(*ctxkit, emuAddr, *storeURL, body, c == "overflow")
			if err != nil {
				log.Fatalf("%d MB %s: %v", mb, c, err)
			}
			fmt.Printf("%-8s %4d MB body  status %d  %6.1f s  guard peak RSS %5d MB: %.1f× the body, %.1f× above the small chat's\n",
				c, len(body)>>20, status, took.Seconds(), peak>>20, float64(peak)/float64(len(body)), float64(peak-idle)/float64(len(body)))
		}
	}
}

// chatBody is an /api/chat request of about size bytes; fits sets a
// num_ctx that holds it all.
func chatBody(size int, c string) ([]byte, error) {
	var out strings.Builder
	for i := 0; out.Len() < 64<<10; i++ {
		fmt.Fprintf(&out, "2026-11-%02dT07:%02d:%02dZ\tINFO\tworker-%d\t\"GET /api/v1/items?page=%d\" 200 %d bytes in %d ms\n",
			1+i%28, i%60, (i*7)%60, i%17, i, 1000+i*37%9000, i%250)
	}
	result := out.String()
	msgs := []msg{{"role": "system", "content": "You are a careful agent."}, {"role": "user", "content": "Your task. SECRET: ANANAS-7734. Remember it."}}
	for n := 0; n < size; n += len(result) + 120 {
		i := len(msgs)
		msgs = append(msgs,
			msg{"role": "assistant", "content": "", "tool_calls": []any{msg{"function": msg{"name": "read_file", "arguments": msg{"path": fmt.Sprintf("logs/%d.log", i)}}}}},
			msg{"role": "tool", "tool_name": "read_file", "content": fmt.Sprintf("file %d:\n%s", i, result)})
	}
	msgs = append(msgs, msg{"role": "user", "content": "What is the secret?"})
	req := msg{"model": model, "stream": false, "messages": msgs}
	if c == "fits" {
		req["options"] = msg{"num_ctx": size} // more than a token a byte
	} else if c != "overflow" {
		return nil, fmt.Errorf("unknown case %q", c)
	}
	return json.Marshal(req)
}

// measure starts a guard, posts body through it, checks that the guard
// compacted it or not, as compact says, and returns the guard's peak RSS,
// how long the call took and its status.
func measure(ctxkit, emuAddr, storeURL string, body []byte, compact bool) (peak int64, took time.Duration, status int, err error) {
	root, err := os.MkdirTemp("", "guardmem")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(root)
	addr := harness.FreeAddr()
	if storeURL == "" {
		storeURL = filepath.Join(root, "ctxkit.db")
	}
	g := exec.Command(ctxkit, "guard", "--listen", addr, "--ollama", "http://"+emuAddr, "--store", storeURL)
	g.Env = append(os.Environ(), "CTXKIT_HOME="+filepath.Join(root, "home"))
	var stderr bytes.Buffer
	g.Stderr = &stderr
	if err := g.Start(); err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		_ = g.Process.Signal(os.Interrupt)
		_ = g.Wait()
	}()
	harness.WaitOK("http://" + addr + "/ctxkit/health")

	client := &http.Client{Timeout: 10 * time.Minute}
	t0 := time.Now()
	resp, err := client.Post("http://"+addr+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, 0, 0, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took = time.Since(t0)
	if err != nil {
		return 0, 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, resp.StatusCode, fmt.Errorf("status %d: %.300s\nguard log: %.2000s", resp.StatusCode, answer, stderr.String())
	}
	var a struct {
		Done   bool `json:"done"`
		Ctxkit struct {
			Compacted bool `json:"compacted"`
		} `json:"ctxkit"`
	}
	if err := json.Unmarshal(answer, &a); err != nil || !a.Done {
		return 0, 0, 0, fmt.Errorf("answer %.300s: %v", answer, err)
	}
	if a.Ctxkit.Compacted != compact {
		return 0, 0, 0, fmt.Errorf("compacted %v, want %v: %.300s", a.Ctxkit.Compacted, compact, answer)
	}
	return harness.PeakRSS(g.Process.Pid), took, resp.StatusCode, nil
}
