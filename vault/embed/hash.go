package embed

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"unicode"
)

// Hashing is a deterministic embedder for tests and benchmarks: each word
// (lower-cased, letters and digits) adds to one of Dim buckets chosen by
// its hash, with a sign from the hash too. Texts that share words get
// similar vectors, so retrieval can be tested without a model, and the
// cost of indexing can be measured without a model's cost.
type Hashing struct {
	Dim int
}

// Spec names the embedder; it is not a spec New accepts.
func (h Hashing) Spec() string { return fmt.Sprintf("hashing:%d", h.Dim) }

// Embed returns the texts' normalised vectors.
func (h Hashing) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if h.Dim <= 0 {
		return nil, fmt.Errorf("%s: dimension must be positive", h.Spec())
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := make([]float32, h.Dim)
		for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			f := fnv.New64a()
			f.Write([]byte(word))
			sum := f.Sum64()
			sign := float32(1)
			if sum&1 == 1 {
				sign = -1
			}
			v[(sum>>1)%uint64(h.Dim)] += sign
		}
		Normalize(v)
		out[i] = v
	}
	return out, nil
}
