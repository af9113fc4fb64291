package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// expectedAnswer computes, straight from the file and not through the types
// of the program, the parts the answer must contain.
func expectedAnswer(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var all []map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	open, comments := map[string]int{}, map[string]int{}
	for _, is := range all {
		if is["state"] != "open" {
			continue
		}
		team := is["author"].(map[string]any)["team"].(string)
		open[team]++
		comments[team] += int(is["comments"].(float64))
	}
	best, tie := "", false
	for team, n := range open {
		switch {
		case best == "" || n > open[best]:
			best, tie = team, false
		case n == open[best]:
			tie = true
		}
	}
	if best == "" || tie {
		t.Fatalf("the data has no single team with the most open issues: %v", open)
	}
	return []string{
		fmt.Sprintf("The %s team", best),
		fmt.Sprintf(": %d,", open[best]),
		fmt.Sprintf("%d comments", comments[best]),
	}
}

// The scripted loop must answer with the numbers computed here straight from
// the data, and must have read far less than the full search result.
func TestScriptedLoop(t *testing.T) {
	const path = "../data/issues.json"
	issues, err := loadIssues(path)
	if err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	rep, err := run(context.Background(), &out, &scriptedModel{}, issues)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range expectedAnswer(t, path) {
		if !strings.Contains(rep.Answer, want) {
			t.Errorf("answer %q does not contain %q", rep.Answer, want)
		}
	}
	for _, want := range []string{"step 1: search_issues", "step 2: result_pipe", "answer: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("transcript lacks %q:\n%s", want, out.String())
		}
	}
	// The open issues are tens of thousands of characters; the notice and
	// the grouped rows are a few thousand at most.
	if rep.Full < 20_000 || rep.Read*10 > rep.Full {
		t.Errorf("model read %d chars of %d: the result was not kept out of context\n%s", rep.Read, rep.Full, out.String())
	}
}

// A scripted model fed something other than what it expects fails instead
// of answering with made-up numbers.
func TestScriptedModelRejectsUnexpectedOutput(t *testing.T) {
	issues, err := loadIssues("../data/issues.json")
	if err != nil {
		t.Fatal(err)
	}
	// No issue matches, so search_issues stores an empty list and the
	// grouped rows are empty.
	var out strings.Builder
	_, err = run(context.Background(), &out, &scriptedModel{}, issues[:0])
	if err == nil || !strings.Contains(err.Error(), "scripted model") {
		t.Errorf("run over no issues: err = %v, want a scripted model error\n%s", err, out.String())
	}
}

func TestLoadIssuesErrors(t *testing.T) {
	if _, err := loadIssues("testdata/does-not-exist.json"); err == nil {
		t.Error("loadIssues of a missing file: no error")
	}
	bad := t.TempDir() + "/bad.json"
	if err := os.WriteFile(bad, []byte(`{"not": "a list"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadIssues(bad); err == nil {
		t.Error("loadIssues of an object: no error")
	}
}

// TestOpenAIModel runs the loop against a fake Chat Completions server on
// loopback, which answers with the scripted model's messages. It covers what
// the offline run skips: the requests the SDK sends (tools, tool messages)
// and the responses it decodes.
func TestOpenAIModel(t *testing.T) {
	const path = "../data/issues.json"
	issues, err := loadIssues(path)
	if err != nil {
		t.Fatal(err)
	}
	script := &scriptedModel{}
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/chat/completions" {
			http.Error(w, fmt.Sprintf("unexpected request %s: %v", r.URL.Path, err), http.StatusBadRequest)
			return
		}
		var req openai.ChatCompletionNewParams
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(req.Tools) == 0 || req.Model != "test-model" {
			http.Error(w, "request without tools or model: "+string(body), http.StatusBadRequest)
			return
		}
		msg, err := script.Next(r.Context(), req.Messages, req.Tools)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": msg}},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	defer srv.Close()

	m := &openaiModel{
		client: openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0)),
		name:   "test-model",
	}
	var out strings.Builder
	rep, err := run(context.Background(), &out, m, issues)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range expectedAnswer(t, path) {
		if !strings.Contains(rep.Answer, want) {
			t.Errorf("answer %q does not contain %q", rep.Answer, want)
		}
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (search, pipe, answer)", n)
	}
}
