package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctxkit/ctxkit/vault/embed"
)

// vectorOf is the emulators' model: a deterministic, unnormalised vector.
func vectorOf(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i, r := range text {
		v[i%dim] += float32(r%7) + 1
	}
	return v
}

// inputs reads the "input" field, a string or an array of strings, as both
// servers accept.
func inputs(t *testing.T, raw json.RawMessage) []string {
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	var one string
	if err := json.Unmarshal(raw, &one); err != nil {
		t.Errorf("input is neither a string nor strings: %s", raw)
	}
	return []string{one}
}

// ollamaEmulator speaks POST /api/embed as Ollama does (llm-servers.md
// §1.13), including its error shape for an unknown model.
func ollamaEmulator(t *testing.T, dim int, requests *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/embed" {
			http.NotFound(w, r)
			return
		}
		requests.Add(1)
		var req struct {
			Model string          `json:"model"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":%q}`, err.Error())
			return
		}
		if req.Model != "all-minilm" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"model \"%s\" not found, try pulling it first"}`, req.Model)
			return
		}
		var out [][]float32
		for _, in := range inputs(t, req.Input) {
			out = append(out, vectorOf(in, dim))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": out, "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8})
	}))
}

// openAIEmulator speaks POST /v1/embeddings as OpenAI does (llm-servers.md
// §3.4), with its error shape for a bad key, and answers out of order to
// check that the client orders by index.
func openAIEmulator(t *testing.T, dim int, requests *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided: sk-wr***.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			return
		}
		var req struct {
			Model          string          `json:"model"`
			Input          json.RawMessage `json:"input"`
			EncodingFormat string          `json:"encoding_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.EncodingFormat != "float" {
			t.Errorf("request: %v, encoding_format %q", err, req.EncodingFormat)
		}
		in := inputs(t, req.Input)
		if len(in) > 2048 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error","code":null}}`)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(in))
		for i, text := range in {
			data[len(in)-1-i] = item{Object: "embedding", Index: i, Embedding: vectorOf(text, dim)}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model, "usage": map[string]int{"prompt_tokens": 8, "total_tokens": 8}})
	}))
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestRemoteEmbedders(t *testing.T) {
	var ollamaRequests, openAIRequests atomic.Int32
	ol := ollamaEmulator(t, 16, &ollamaRequests)
	defer ol.Close()
	oa := openAIEmulator(t, 16, &openAIRequests)
	defer oa.Close()
	texts := make([]string, 150)
	for i := range texts {
		texts[i] = fmt.Sprintf("chunk %d of the document, about topic %d", i, i%5)
	}
	for _, tc := range []struct {
		spec     string
		vars     map[string]string
		requests *atomic.Int32
		batches  int32
	}{
		{"ollama:all-minilm", map[string]string{"OLLAMA_HOST": strings.TrimPrefix(ol.URL, "http://")}, &ollamaRequests, 3},
		{"openai:text-embedding-3-small", map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "sk-test"}, &openAIRequests, 1},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			e, err := embed.New(tc.spec, embed.Options{Getenv: env(tc.vars)})
			if err != nil {
				t.Fatal(err)
			}
			if e.Spec() != tc.spec {
				t.Errorf("Spec() = %q", e.Spec())
			}
			vectors, err := e.Embed(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.requests.Load(); got != tc.batches {
				t.Errorf("%d requests for %d texts, want %d", got, len(texts), tc.batches)
			}
			if len(vectors) != len(texts) {
				t.Fatalf("%d vectors for %d texts", len(vectors), len(texts))
			}
			for i, v := range vectors {
				want := vectorOf(texts[i], 16)
				embed.Normalize(want)
				if math.Abs(float64(embed.Dot(v, want))-1) > 1e-5 {
					t.Fatalf("vector %d is not the text's own (cosine %v): order or normalisation lost", i, embed.Dot(v, want))
				}
			}
		})
	}
}

func TestRemoteErrorsCarryTheServersMessage(t *testing.T) {
	var n atomic.Int32
	ol := ollamaEmulator(t, 8, &n)
	defer ol.Close()
	oa := openAIEmulator(t, 8, &n)
	defer oa.Close()
	for _, tc := range []struct {
		spec string
		vars map[string]string
		want string
	}{
		{"ollama:nomodel", map[string]string{"OLLAMA_HOST": ol.URL}, `model "nomodel" not found, try pulling it first`},
		{"openai:m", map[string]string{"OPENAI_BASE_URL": oa.URL + "/v1", "OPENAI_API_KEY": "sk-wrong"}, "Incorrect API key provided: sk-wr***. (invalid_api_key)"},
	} {
		e, err := embed.New(tc.spec, embed.Options{Getenv: env(tc.vars)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Embed(t.Context(), []string{"x"})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.spec) {
			t.Errorf("%s: %v; want the server's message %q and the spec", tc.spec, err, tc.want)
		}
	}
}

func TestSpecs(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    string
		wantErr string
	}{
		{spec: "none", want: "none"},
		{spec: "ollama:nomic-embed-text", want: "ollama:nomic-embed-text"},
		{spec: "OpenAI:text-embedding-3-small", want: "openai:text-embedding-3-small"},
		{spec: "builtin", want: "builtin"},
		{spec: "ollama", wantErr: "name the model"},
		{spec: "none:x", wantErr: "takes no model"},
		{spec: "cohere:embed", wantErr: "want none, builtin"},
		{spec: "openai:two words", wantErr: "white space"},
	} {
		s, err := embed.ParseSpec(tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: %v, want %q", tc.spec, err, tc.wantErr)
			}
			continue
		}
		if err != nil || s.String() != tc.want {
			t.Errorf("%q: %v %v, want %q", tc.spec, s, err, tc.want)
		}
	}
	if _, err := embed.New("none", embed.Options{}); !errors.Is(err, embed.ErrNone) {
		t.Errorf("none: %v", err)
	}
	if _, err := embed.New("builtin", embed.Options{}); !errors.Is(err, embed.ErrUnavailable) {
		t.Errorf("builtin: %v", err)
	}
}

func TestHashingEmbedderRanksSharedWords(t *testing.T) {
	h := embed.Hashing{Dim: 256}
	v, err := h.Embed(context.Background(), []string{"cloud costs rose by fifteen percent", "the cloud budget and its costs", "a recipe for lemon cake"})
	if err != nil {
		t.Fatal(err)
	}
	if embed.Dot(v[0], v[1]) <= embed.Dot(v[0], v[2]) {
		t.Errorf("texts sharing words are not closer: %v vs %v", embed.Dot(v[0], v[1]), embed.Dot(v[0], v[2]))
	}
	again, _ := h.Embed(context.Background(), []string{"cloud costs rose by fifteen percent"})
	if embed.Dot(v[0], again[0]) < 0.9999 {
		t.Error("the same text twice gives different vectors")
	}
}

func TestDot(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 384, 1000} {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = float32(i%13)-6, float32(i%7)-3
			want += float64(a[i]) * float64(b[i])
		}
		if got := embed.Dot(a, b); math.Abs(float64(got)-want) > 1e-3 {
			t.Errorf("n=%d: Dot = %v, want %v", n, got, want)
		}
	}
}

func BenchmarkDot384(b *testing.B) {
	x, y := make([]float32, 384), make([]float32, 384)
	for i := range x {
		x[i], y[i] = float32(i)/384, 1-float32(i)/384
	}
	var sink float32
	for b.Loop() {
		sink += embed.Dot(x, y)
	}
	_ = sink
}
