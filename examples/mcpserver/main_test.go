package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestDemoAnswersFromTheStoredResult(t *testing.T) {
	issues, err := os.ReadFile("../data/issues.json")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runDemo(t.Context(), newServer(issues), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{`"stored_result":"list_issues_`, `"items":400`, `"author.team":"core","open":55`} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %s:\n%s", want, got)
		}
	}
	notice, _, _ := strings.Cut(got, "\n\nresult_pipe")
	if len(notice) > 4000 || len(notice) >= len(issues)/10 {
		t.Errorf("the model saw %d chars of a %d-byte result", len(notice), len(issues))
	}
}
