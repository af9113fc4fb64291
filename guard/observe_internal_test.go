package guard

import "testing"

// TestTruncation: the signs of a silent cut, on the numbers a real Ollama
// v0.17.4 gave (issue 19, defect 3): one message over num_ctx 2048 comes
// back with prompt_eval_count exactly 2048 and done_reason "length"; six
// messages of 6,056 tokens come back with 36, whole messages dropped.
func TestTruncation(t *testing.T) {
	for _, tc := range []struct {
		name             string
		window, sent     int
		chars            int
		eval             int
		lengthStop, want bool
	}{
		{"one message cut to exactly num_ctx", 2048, 1800, 18000, 2048, true, true},
		{"one message cut, estimate over the window", 2048, 6000, 18000, 2048, false, true},
		{"messages dropped, estimate short 3.4 times", 2048, 1780, 18100, 36, false, true},
		{"messages dropped, estimate over the window", 2048, 6100, 18100, 36, false, true},
		{"fits: counted a little under the estimate", 2048, 1800, 6000, 1500, false, false},
		{"fits: counted over the estimate", 2048, 1500, 6000, 1800, false, false},
		{"fits exactly and stops at max tokens", 2048, 1500, 6000, 1900, true, false},
		{"whole window evaluated but not stopped", 2048, 1500, 6000, 2048, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fit{window: tc.window, sent: tc.sent, chars: tc.chars}
			if got := truncation(f, tc.eval, tc.lengthStop) != ""; got != tc.want {
				t.Errorf("truncated %v (%q), want %v", got, truncation(f, tc.eval, tc.lengthStop), tc.want)
			}
		})
	}
}
