package realollama_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ctxkit/ctxkit/internal/realollama"
)

func TestParseRecord(t *testing.T) {
	tests := []struct {
		line      string
		ok        bool
		level     string
		msg       string
		attrs     map[string]string
		wantAttrs bool
	}{
		{
			line:  `time=2026-12-01T23:13:10.567Z level=WARN source=runner.go:153 msg="truncating input prompt" limit=2048 prompt=6026 keep=4 new=2048`,
			ok:    true,
			level: "WARN", msg: "truncating input prompt",
			attrs: map[string]string{"time": "2026-12-01T23:13:10.567Z", "source": "runner.go:153", "limit": "2048", "prompt": "6026", "keep": "4", "new": "2048"},
		},
		{
			line:  `time=x level=INFO msg=ready path="/a b\"c"`,
			ok:    true,
			level: "INFO", msg: "ready",
			attrs: map[string]string{"time": "x", "path": `/a b"c`},
		},
		{line: `llama_context: n_ctx         = 4096`},
		{line: `[GIN] 2026/12/01 - 23:13:11 | 200 |  986.855276ms |       127.0.0.1 | POST     "/api/generate"`},
		{line: `time=x level=INFO`},            // no msg
		{line: `time=x msg="unterminated`},     // bad quote
		{line: `print_info: n_vocab = 1476 x`}, // a key with a colon and a space
		{line: ``},
	}
	for _, tt := range tests {
		r, ok := realollama.ParseRecord(tt.line)
		if ok != tt.ok {
			t.Errorf("%q: ok %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		if r.Level != tt.level || r.Msg != tt.msg || fmt.Sprint(r.Attrs) != fmt.Sprint(tt.attrs) {
			t.Errorf("%q: %+v, want level %s msg %q attrs %v", tt.line, r, tt.level, tt.msg, tt.attrs)
		}
	}
}

func TestLog(t *testing.T) {
	var l realollama.Log
	fmt.Fprintln(&l, `time=a level=INFO msg=one`)
	mark := l.Len()
	fmt.Fprintln(&l, `noise`)
	fmt.Fprintln(&l, `time=b level=WARN msg="two words" n=2`)
	if got := l.Since(mark); got != "noise\ntime=b level=WARN msg=\"two words\" n=2\n" {
		t.Errorf("Since: %q", got)
	}
	rs := l.Records(mark)
	if len(rs) != 1 || rs[0].Msg != "two words" || rs[0].Attrs["n"] != "2" {
		t.Errorf("Records: %+v", rs)
	}
	if n := len(l.Records(0)); n != 2 {
		t.Errorf("%d records in all", n)
	}
}

// TestServer starts a real server and checks what the harness promises:
// the model, its trained context, a second model's num_ctx, the log.
func TestServer(t *testing.T) {
	s := realollama.Start(t, realollama.Options{})

	var show struct {
		ModelInfo  map[string]any `json:"model_info"`
		Parameters string         `json:"parameters"`
		Template   string         `json:"template"`
	}
	if code := realollama.PostJSON(t, s.URL()+"/api/show", map[string]any{"model": realollama.DefaultModel}, &show); code != 200 {
		t.Fatalf("/api/show: %d", code)
	}
	if show.ModelInfo["llama.context_length"] != float64(8192) {
		t.Errorf("llama.context_length %v", show.ModelInfo["llama.context_length"])
	}
	if !strings.Contains(show.Template, "<|im_start|>") {
		t.Errorf("template %q", show.Template)
	}

	s.Create(t, realollama.Model{Name: "tiny1k", NumCtx: 1024})
	if code := realollama.PostJSON(t, s.URL()+"/api/show", map[string]any{"model": "tiny1k"}, &show); code != 200 {
		t.Fatalf("/api/show tiny1k: %d", code)
	}
	if !strings.Contains(show.Parameters, "num_ctx") || !strings.Contains(show.Parameters, "1024") {
		t.Errorf("tiny1k parameters %q", show.Parameters)
	}

	// A prompt over the window: the runner cuts it to exactly num_ctx and
	// says so at WARN in the log.
	mark := s.Log().Len()
	var gen struct {
		PromptEvalCount int    `json:"prompt_eval_count"`
		DoneReason      string `json:"done_reason"`
	}
	prompt := strings.Repeat("the cat sat on the mat. ", 200)
	code := realollama.PostJSON(t, s.URL()+"/api/generate", map[string]any{
		"model": "tiny1k", "prompt": prompt, "raw": true, "stream": false,
		"options": map[string]any{"num_predict": 1},
	}, &gen)
	if code != 200 || gen.PromptEvalCount != 1024 {
		t.Errorf("generate over the window: %d, prompt_eval_count %d, want 200 and 1024", code, gen.PromptEvalCount)
	}
	var warned bool
	for _, r := range s.Log().Records(mark) {
		if r.Level == "WARN" && r.Msg == "truncating input prompt" {
			warned = r.Attrs["limit"] == "1024"
		}
	}
	if !warned {
		t.Errorf("no WARN truncating input prompt limit=1024 in the log:\n%s", s.Log().Since(mark))
	}

	var ps struct {
		Models []struct {
			Name          string `json:"name"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL()+"/api/ps", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) != 1 || ps.Models[0].ContextLength != 1024 {
		t.Errorf("/api/ps %+v, want tiny1k at 1024", ps.Models)
	}
}
