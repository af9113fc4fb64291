package llmemu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Request is one HTTP request an emulator received.
type Request struct {
	// Method and Path are the request's method and URL path.
	Method, Path string
	// Header is a copy of the request's header.
	Header http.Header
	// Body is the request body as received.
	Body []byte
}

// Eval is what an emulator did with one generation request: what it was
// sent, what it kept, what it answered.
type Eval struct {
	// Path is the endpoint.
	Path string
	// Model is the model asked for.
	Model string
	// SentTokens is the prompt's token count before any truncation.
	SentTokens int
	// PromptTokens is the token count evaluated (after truncation), as
	// reported in prompt_eval_count or usage.
	PromptTokens int
	// SentMessages and KeptMessages count the chat messages before and
	// after Ollama's message-level truncation (0 for raw prompts).
	SentMessages, KeptMessages int
	// Truncated tells whether anything was cut.
	Truncated bool
	// Status is the HTTP status answered.
	Status int
	// Prompt is the kept rendered prompt.
	Prompt string
	// Reply is the model's reply (empty on an error).
	Reply Reply
	// NumCtx is the window the request ran at, when the server has one
	// per request (Ollama: num_ctx as loaded); 0 otherwise.
	NumCtx int
}

// Recorder keeps the requests an emulator received and what it did with
// them; it is safe for concurrent use. Every emulator embeds one.
type Recorder struct {
	mu      sync.Mutex
	reqs    []Request
	evals   []Eval
	aborted int
}

// Aborted returns how many requests ended early because their client went
// away (during the Latency wait or a stream).
func (r *Recorder) Aborted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.aborted
}

func (r *Recorder) abort() {
	r.mu.Lock()
	r.aborted++
	r.mu.Unlock()
}

// wait sleeps d unless ctx ends first, which counts as an abort.
func (r *Recorder) wait(ctx context.Context, d time.Duration) error {
	err := sleepCtx(ctx, d)
	if err != nil {
		r.abort()
	}
	return err
}

// Requests returns a copy of the requests received, oldest first.
func (r *Recorder) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// LastRequest returns the last request received that was not a question
// about the server (a GET, or Ollama's /api/show, which a proxy asks
// around the requests it forwards), if any.
func (r *Recorder) LastRequest() (Request, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.reqs) - 1; i >= 0; i-- {
		if q := r.reqs[i]; q.Method != http.MethodGet && q.Path != "/api/show" {
			return q, true
		}
	}
	return Request{}, false
}

// RequestCount returns how many requests were received on path, or on
// any path when path is empty.
func (r *Recorder) RequestCount(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if path == "" {
		return len(r.reqs)
	}
	n := 0
	for _, q := range r.reqs {
		if q.Path == path {
			n++
		}
	}
	return n
}

// Evals returns a copy of the generation records, oldest first.
func (r *Recorder) Evals() []Eval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evals)
}

// LastEval returns the last generation record, if any.
func (r *Recorder) LastEval() (Eval, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.evals) == 0 {
		return Eval{}, false
	}
	return r.evals[len(r.evals)-1], true
}

// Reset forgets every request and record.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs, r.evals, r.aborted = nil, nil, 0
}

// record reads the request body, keeps a copy, and puts the body back.
func (r *Recorder) record(req *http.Request) ([]byte, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		if err != nil {
			return nil, fmt.Errorf("llmemu: read request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, Request{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
	r.mu.Unlock()
	return body, nil
}

// answered limits reply's text to max tokens of c (max <= 0: no limit), records
// ev as answered with it, and returns it with its finish reason in OpenAI's
// words: tool_calls, length (cut short) or stop.
func (r *Recorder) answered(ev *Eval, reply Reply, max int, c Counter) (Reply, string) {
	text, short := limitReplyWith(c, reply.Text, max)
	reply.Text = text
	ev.Status, ev.Reply = http.StatusOK, reply
	r.addEval(*ev)
	switch {
	case len(reply.ToolCalls) > 0:
		return reply, "tool_calls"
	case short:
		return reply, "length"
	}
	return reply, "stop"
}

func (r *Recorder) addEval(e Eval) {
	r.mu.Lock()
	r.evals = append(r.evals, e)
	r.mu.Unlock()
}

// Timing is the emulators' latency: none by default.
type Timing struct {
	// Latency is waited before answering a request.
	Latency time.Duration
	// ChunkDelay is waited before each streamed chunk after the first.
	ChunkDelay time.Duration
}

// sleepCtx sleeps d, or returns ctx's error as soon as ctx ends (at once
// when it already has).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// writeJSON answers status with v as JSON, without HTML escaping and
// without a trailing newline.
func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	body, err := marshal(v)
	if err != nil {
		http.Error(w, "llmemu: encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeRaw(w, status, contentType, body)
}

// marshal is json.Marshal without HTML escaping.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func writeRaw(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}

// embed returns a deterministic unit vector of dim dimensions for text:
// each token adds ±1 to a bucket chosen by its hash.
func embed(text string, dim int) []float32 {
	if dim <= 0 {
		dim = 384
	}
	v := make([]float64, dim)
	for _, tok := range Tokenize(text) {
		h := fnv.New64a()
		h.Write([]byte(tok))
		s := h.Sum64()
		sign := 1.0
		if s>>63 == 1 {
			sign = -1
		}
		v[int(s%uint64(dim))] += sign
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dim)
	if norm == 0 {
		out[0] = 1
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// stringOrList decodes a JSON string or array of strings.
type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("input: want a string or an array of strings: %w", err)
	}
	*s = many
	return nil
}

// commonPrefix returns how many leading tokens a and b share.
func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
