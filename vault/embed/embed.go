// Package embed turns text into vectors for semantic vaults. An embedder is
// named by a spec — "none", "builtin", "ollama:MODEL" or "openai:MODEL" —
// chosen when a vault is created and pinned in its config with the vectors'
// dimension, so that a vault is never queried with vectors of another
// model. Resolve turns the names people give embedders, sentence-transformers
// model names such as all-MiniLM-L6-v2 among them, into specs (names.go).
//
// The remote embedders speak the servers' own wire formats, with net/http
// rather than an SDK: Ollama's POST /api/embed and the OpenAI-compatible
// POST /v1/embeddings (OpenAI, vLLM, LocalAI, LM Studio, llama.cpp server,
// Ollama's /v1). Both are a single JSON request each, and an SDK would pull
// in far more than the two structs needed. Every vector returned is L2
// normalised, so a dot product is a cosine similarity.
package embed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/vault/embed/bert"
)

// DefaultBuiltinModel is the model of a bare "builtin" spec.
const DefaultBuiltinModel = "all-MiniLM-L6-v2"

// Providers of embedders, the part of a spec before the colon.
const (
	None    = "none"    // lexical search only
	Builtin = "builtin" // an in-process BERT model (package bert)
	Ollama  = "ollama"  // Ollama's /api/embed
	OpenAI  = "openai"  // any OpenAI-compatible /v1/embeddings
)

// ErrNone is returned by New for the "none" spec: the vault searches
// lexically only.
var ErrNone = errors.New("no embedder: lexical search only")

// ErrUnavailable is returned by New for a provider this build cannot run.
var ErrUnavailable = errors.New("embedder not available")

// Embedder turns texts into vectors of one model.
type Embedder interface {
	// Spec is the embedder's spec, as pinned in a vault's config.
	Spec() string
	// Embed returns one L2-normalised vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Spec is a parsed embedder spec.
type Spec struct {
	Provider string
	Model    string
}

// String formats the spec as it is written.
func (s Spec) String() string {
	if s.Model == "" {
		return s.Provider
	}
	return s.Provider + ":" + s.Model
}

// ParseSpec reads "none", "builtin[:MODEL]", "ollama:MODEL" or
// "openai:MODEL".
func ParseSpec(spec string) (Spec, error) {
	provider, model, _ := strings.Cut(strings.TrimSpace(spec), ":")
	s := Spec{Provider: strings.ToLower(provider), Model: model}
	switch s.Provider {
	case None:
		if model != "" {
			return s, fmt.Errorf("embedding model %q: none takes no model", spec)
		}
	case Builtin:
	case Ollama, OpenAI:
		if model == "" {
			return s, fmt.Errorf("embedding model %q: name the model, as in %s:MODEL", spec, s.Provider)
		}
	default:
		return s, fmt.Errorf("embedding model %q: want none, builtin, ollama:MODEL or openai:MODEL", spec)
	}
	if strings.ContainsAny(model, " \t\r\n") {
		return s, fmt.Errorf("embedding model %q: the model name holds white space", spec)
	}
	return s, nil
}

// Options configure the remote embedders.
type Options struct {
	// HTTPClient sends the requests; nil means a client without timeout
	// (requests follow their context).
	HTTPClient *http.Client
	// Getenv reads OLLAMA_HOST, OPENAI_BASE_URL and OPENAI_API_KEY; nil
	// means os.Getenv.
	Getenv func(string) string
	// BatchSize is the most texts per request; 0 means the provider's
	// default (64 for Ollama, 256 for OpenAI, whose limit is 2,048).
	BatchSize int
	// ModelsDir holds the builtin models, one directory each; "" means
	// $CTXKIT_HOME/models (~/.ctxkit/models when CTXKIT_HOME is unset).
	ModelsDir string
}

// New returns the embedder for spec. "none" gives ErrNone. "builtin:MODEL"
// (MODEL defaults to DefaultBuiltinModel) runs the model in
// ModelsDir/MODEL in process; when its files are missing New returns
// ErrUnavailable with a message naming the files to copy and where. The
// weights are read on the first Embed.
func New(spec string, opts Options) (Embedder, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	switch s.Provider {
	case None:
		return nil, ErrNone
	case Builtin:
		return newBuiltin(s, opts)
	case Ollama:
		return newOllama(s, opts), nil
	default:
		return newOpenAI(s, opts)
	}
}

// Normalize scales v to unit length in place; a zero vector stays zero.
func Normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}

// Dot is the dot product of two vectors of the same length: the cosine
// similarity of normalised vectors. The loop is unrolled by eight, which
// the compiler turns into independent multiply-adds.
func Dot(a, b []float32) float32 {
	if len(a) != len(b) {
		panic("embed.Dot: vectors of different lengths")
	}
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		a8, b8 := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += a8[0] * b8[0]
		s1 += a8[1] * b8[1]
		s2 += a8[2] * b8[2]
		s3 += a8[3] * b8[3]
		s4 += a8[4] * b8[4]
		s5 += a8[5] * b8[5]
		s6 += a8[6] * b8[6]
		s7 += a8[7] * b8[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// batches cuts texts into runs of at most size.
func batches(texts []string, size int) [][]string {
	var out [][]string
	for len(texts) > size {
		out = append(out, texts[:size])
		texts = texts[size:]
	}
	if len(texts) > 0 {
		out = append(out, texts)
	}
	return out
}

// finish checks a batch's vectors and normalises them.
func finish(spec string, want int, vectors [][]float32) ([][]float32, error) {
	if len(vectors) != want {
		return nil, fmt.Errorf("%s: the server returned %d vectors for %d texts", spec, len(vectors), want)
	}
	for i, v := range vectors {
		if len(v) == 0 || len(v) != len(vectors[0]) {
			return nil, fmt.Errorf("%s: vector %d has %d dimensions, vector 0 has %d", spec, i, len(v), len(vectors[0]))
		}
		Normalize(v)
	}
	return vectors, nil
}

// VectorBytes encodes a vector as little-endian float32s, the form the
// stores keep (nil stays nil).
func VectorBytes(v []float32) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// VectorFromBytes decodes VectorBytes; a trailing partial float is
// ignored (nil stays nil).
func VectorFromBytes(b []byte) []float32 {
	if b == nil {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// builtin is an in-process BERT model, loaded on first use.
type builtin struct {
	spec string
	load func() (*bert.Model, error)
}

// newBuiltin checks that the model's files are in place.
func newBuiltin(s Spec, opts Options) (Embedder, error) {
	if s.Model == "" {
		s.Model = DefaultBuiltinModel
	}
	if s.Model == "." || s.Model == ".." || strings.ContainsAny(s.Model, `/\`) {
		return nil, fmt.Errorf("embedding model %q: a builtin model name cannot hold a path", s)
	}
	models := opts.ModelsDir
	if models == "" {
		h := opts.Getenv("CTXKIT_HOME")
		if h == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("%w: builtin model %q: find the home directory (set CTXKIT_HOME): %v", ErrUnavailable, s.Model, err)
			}
			h = filepath.Join(home, ".ctxkit")
		}
		models = filepath.Join(h, "models")
	}
	dir := filepath.Join(models, s.Model)
	var missing []string
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
		return err == nil
	}
	for _, f := range []string{bert.ConfigFile, bert.WeightsFile, bert.PoolingFile} {
		if !exists(f) {
			missing = append(missing, f)
		}
	}
	if !exists(bert.TokenizerFile) && !exists(bert.VocabFile) {
		missing = append(missing, bert.TokenizerFile+" (or "+bert.VocabFile+")")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: builtin model %q is not installed: copy %s of the Hugging Face model (sentence-transformers layout) into %s",
			ErrUnavailable, s.Model, strings.Join(missing, ", "), dir)
	}
	return &builtin{spec: s.String(), load: sync.OnceValues(func() (*bert.Model, error) { return bert.Load(dir) })}, nil
}

func (b *builtin) Spec() string { return b.spec }

func (b *builtin) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	m, err := b.load()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.spec, err)
	}
	v, err := m.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.spec, err)
	}
	return v, nil
}
