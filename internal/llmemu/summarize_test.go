package llmemu

import (
	"fmt"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"facts kept in order", "we looked around. the build failed with exit code 2. nothing else here.\nthen Alice decided to ship. SECRET: ANANAS-7734.", "the build failed with exit code 2.\nthen Alice decided to ship.\nSECRET: ANANAS-7734."},
		{"first word capital is not a fact", "Then we waited. Nobody came!", NothingOfNote},
		{"acronyms and ids", "the API returned nothing? it said ok", "the API returned nothing?"},
		{"each fact once", "port 8080 is open. port 8080 is open.", "port 8080 is open."},
		{"empty", "", NothingOfNote},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.text); got != tc.want {
				t.Fatalf("Summarize(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestThinkSummarizes(t *testing.T) {
	prompt := "Summarize the text between the markers.\n" + SummaryBegin + "\nsome filler here. the id is ctx-42.\n" + SummaryEnd + "\n"
	cases := []struct {
		name string
		turn Turn
		want string
	}{
		{"generate", Turn{Prompt: RenderChat([]Message{{Role: "user", Content: prompt}}, nil)}, "the id is ctx-42."},
		{"chat", Turn{Messages: []Message{{Role: "user", Content: prompt}}}, "the id is ctx-42."},
		{"end marker lost", Turn{Prompt: "Summarize this.\n" + SummaryBegin + "\nthe id is ctx-42. and"}, "the id is ctx-42."},
		{"no markers", Turn{Prompt: "Summarize the id ctx-42."}, "OK"},
		{"not asked", Turn{Prompt: SummaryBegin + "\nthe id is ctx-42.\n" + SummaryEnd}, "OK"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Think(tc.turn).Text; got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	// the server bounds the summary by num_predict like any answer
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "fact %d here. ", i)
	}
	long := b.String()
	if got, cut := limitReply(Summarize(long), 5); !cut || CountTokens(got) != 5 {
		t.Fatalf("limitReply: %q, %v", got, cut)
	}
}

func TestSummarizeLongSentence(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor ", 30)
	got := Summarize(filler + "SECRET: ANANAS-7734 " + filler + "end.")
	if want := "… dolor lorem ipsum dolor SECRET: ANANAS-7734 lorem ipsum dolor lorem …"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
