package guard_test

import (
	"testing"

	"github.com/ctxkit/ctxkit/guard"
)

// BenchmarkEstimate counts 16 KB of each of a few kinds of text; the
// estimate runs on every message of every request.
func BenchmarkEstimate(b *testing.B) {
	for _, name := range []string{"prose", "code-go", "json", "log-app", "chinese", "base64"} {
		var text string
		for _, k := range textKinds {
			if k.name == name {
				text = k.make(16 << 10)
			}
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				guard.Estimate(text)
			}
		})
	}
}
