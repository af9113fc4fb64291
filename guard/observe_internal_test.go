package guard

import "testing"

// TestTruncation: the signs of a silent cut, on the numbers a real Ollama
// v0.17.4 gave (issue 19, defect 3): one message over num_ctx 2048 comes
// back with prompt_eval_count exactly 2048 (done_reason "length" only when
// num_predict ran out: context shift goes on generating); six
// messages of 6,056 tokens come back with 36, whole messages dropped.
func TestTruncation(t *testing.T) {
	for _, tc := range []struct {
		name         string
		window, sent int
		chars        int
		eval         int
		want         bool
	}{
		{"one message cut to exactly num_ctx", 2048, 1800, 18000, 2048, true},
		{"one message cut, estimate over the window", 2048, 6000, 18000, 2048, true},
		{"messages dropped, estimate short 3.4 times", 2048, 1780, 18100, 36, true},
		{"messages dropped, estimate over the window", 2048, 6100, 18100, 36, true},
		{"fits: counted a little under the estimate", 2048, 1800, 6000, 1500, false},
		{"fits: counted over the estimate", 2048, 1500, 6000, 1800, false},
		{"whole window evaluated, generation went on", 2048, 1500, 6000, 2048, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fit{window: tc.window, sent: tc.sent, chars: tc.chars}
			if got := truncation(f, tc.eval) != ""; got != tc.want {
				t.Errorf("truncated %v (%q), want %v", got, truncation(f, tc.eval), tc.want)
			}
		})
	}
}
