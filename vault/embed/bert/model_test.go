package bert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// golden is a file written by bench/bert_reference.py: the numpy
// reference's token ids and embeddings for some sentences.
type golden struct {
	Reference string      `json:"reference"`
	Config    Config      `json:"config"`
	Sentences []string    `json:"sentences"`
	IDs       [][]int     `json:"ids"`
	Mean      [][]float64 `json:"mean"`
	CLS       [][]float64 `json:"cls"`
}

func readGolden(t testing.TB, path string) golden {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// tolerance of the agreement with the float64 numpy reference.
const tolerance = 1e-5

func compareVectors(t *testing.T, label string, got [][]float32, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d vectors, want %d", label, len(got), len(want))
	}
	worst := 0.0
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s %d: dimension %d, want %d", label, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			d := math.Abs(float64(got[i][j]) - want[i][j])
			worst = max(worst, d)
			if d > tolerance {
				t.Fatalf("%s %d[%d] = %.8f, want %.8f", label, i, j, got[i][j], want[i][j])
			}
		}
	}
	t.Logf("%s: worst difference %.2g", label, worst)
}

func TestTinyModelGolden(t *testing.T) {
	dir := filepath.Join("testdata", "tiny")
	g := readGolden(t, filepath.Join(dir, "golden.json"))
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range g.Sentences {
		if got := m.Tokenizer().Encode(s, m.MaxLen()); !slices.Equal(got, g.IDs[i]) {
			t.Errorf("ids of %q = %v, want %v", s, got, g.IDs[i])
		}
	}
	// One batch, padded to the longest sentence.
	got, err := m.Embed(t.Context(), g.Sentences)
	if err != nil {
		t.Fatal(err)
	}
	compareVectors(t, "mean, one batch", got, g.Mean)
	// Batches of 2 and of 1 give the same vectors.
	for _, bs := range []int{1, 2} {
		m.BatchSize = bs
		got, err := m.Embed(t.Context(), g.Sentences)
		if err != nil {
			t.Fatal(err)
		}
		compareVectors(t, fmt.Sprintf("mean, batches of %d", bs), got, g.Mean)
	}
	m.pooling = PoolCLS
	got, err = m.EmbedIDs(g.IDs)
	if err != nil {
		t.Fatal(err)
	}
	compareVectors(t, "cls", got, g.CLS)
}

// weightGen mirrors weightgen of bench/bert_reference.py: deterministic
// weights from integer hashing, the same bits in Go and numpy.
func weightGen(name string, n int) []float32 {
	seed := uint64(2166136261)
	for _, c := range []byte(name) {
		seed = ((seed ^ uint64(c)) * 16777619) & 0xFFFFFFFF
	}
	kind, scale := 0, float32(0.0625)
	switch {
	case strings.Contains(name, "LayerNorm.weight"):
		kind, scale = 1, 0.125
	case strings.Contains(name, "LayerNorm.bias"):
		scale = 0.0625
	case strings.Contains(name, "embeddings"):
		scale = 0.5
	case strings.HasSuffix(name, ".bias"):
		scale = 0.03125
	}
	out := make([]float32, n)
	for i := range out {
		h := (uint64(i)*2654435761 + seed) & 0xFFFFFFFF
		h ^= h >> 15
		h = (h * 2246822519) & 0xFFFFFFFF
		h ^= h >> 13
		v := (float32(h>>8) - float32(1<<23)) / float32(1<<23)
		if kind == 1 {
			v = 1 + v*scale
		} else {
			v *= scale
		}
		out[i] = v
	}
	return out
}

// syntheticTensors builds the tensors of a BertModel of shape cfg with
// weightGen.
func syntheticTensors(cfg Config) map[string]Tensor {
	H, I := cfg.HiddenSize, cfg.IntermediateSize
	shapes := map[string][]int{
		"embeddings.word_embeddings.weight":       {cfg.VocabSize, H},
		"embeddings.position_embeddings.weight":   {cfg.MaxPositionEmbeddings, H},
		"embeddings.token_type_embeddings.weight": {cfg.TypeVocabSize, H},
		"embeddings.LayerNorm.weight":             {H},
		"embeddings.LayerNorm.bias":               {H},
	}
	for l := range cfg.NumHiddenLayers {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		for _, n := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			shapes[p+n+".weight"], shapes[p+n+".bias"] = []int{H, H}, []int{H}
		}
		shapes[p+"intermediate.dense.weight"], shapes[p+"intermediate.dense.bias"] = []int{I, H}, []int{I}
		shapes[p+"output.dense.weight"], shapes[p+"output.dense.bias"] = []int{H, I}, []int{H}
		for _, n := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
			shapes[p+n+".weight"], shapes[p+n+".bias"] = []int{H}, []int{H}
		}
	}
	out := make(map[string]Tensor, len(shapes))
	for name, sh := range shapes {
		n := 1
		for _, d := range sh {
			n *= d
		}
		out[name] = Tensor{DType: "F32", Shape: sh, Data: weightGen(name, n)}
	}
	return out
}

// miniLM returns the MiniLM-shaped model of testdata/minilm_golden.json
// (6 layers, hidden 384, 12 heads, intermediate 1536) with the tiny
// vocabulary.
func miniLM(t testing.TB, simd bool) (*Model, golden) {
	t.Helper()
	g := readGolden(t, filepath.Join("testdata", "minilm_golden.json"))
	if err := g.Config.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := newModel(g.Config, PoolMean, tinyTokenizer(t), syntheticTensors(g.Config), simd)
	if err != nil {
		t.Fatal(err)
	}
	return m, g
}

func TestMiniLMShapedGolden(t *testing.T) {
	for _, simd := range []bool{false, true} {
		if simd && !hasSIMD {
			t.Log("no vector kernel on this CPU")
			continue
		}
		t.Run(fmt.Sprintf("simd=%v", simd), func(t *testing.T) { testMiniLMShaped(t, simd) })
	}
}

func testMiniLMShaped(t *testing.T, simd bool) {
	m, g := miniLM(t, simd)
	if g.Config.HiddenSize != 384 || g.Config.NumHiddenLayers != 6 || g.Config.NumAttentionHeads != 12 || g.Config.IntermediateSize != 1536 {
		t.Fatalf("golden config is not MiniLM-shaped: %+v", g.Config)
	}
	got, err := m.Embed(t.Context(), g.Sentences)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range g.Sentences {
		if ids := m.Tokenizer().Encode(s, 0); !slices.Equal(ids, g.IDs[i]) {
			t.Errorf("ids of %q = %v, want %v", s, ids, g.IDs[i])
		}
	}
	compareVectors(t, "minilm-shaped", got, g.Mean)
}

func TestNewRejectsBadWeights(t *testing.T) {
	cfg := Config{VocabSize: 10, HiddenSize: 8, NumHiddenLayers: 1, NumAttentionHeads: 2, IntermediateSize: 16, MaxPositionEmbeddings: 16, TypeVocabSize: 2, LayerNormEps: 1e-12, HiddenAct: "gelu"}
	good := syntheticTensors(cfg)
	if _, err := New(cfg, PoolMean, nil, good); err != nil {
		t.Fatalf("good weights: %v", err)
	}
	missing := maps(good)
	delete(missing, "encoder.layer.0.output.dense.weight")
	if _, err := New(cfg, PoolMean, nil, missing); err == nil || !strings.Contains(err.Error(), "output.dense.weight: missing") {
		t.Errorf("missing tensor: err = %v", err)
	}
	wrong := maps(good)
	wrong["embeddings.LayerNorm.bias"] = Tensor{Shape: []int{7}, Data: make([]float32, 7)}
	if _, err := New(cfg, PoolMean, nil, wrong); err == nil || !strings.Contains(err.Error(), "shape [7]") {
		t.Errorf("wrong shape: err = %v", err)
	}
	if _, err := New(cfg, "max", nil, good); err == nil {
		t.Errorf("max pooling accepted")
	}
	m, _ := New(cfg, PoolMean, nil, good)
	for _, ids := range [][][]int{{{}}, {{1, 10}}, {{-1}}, {make([]int, 17)}} {
		if _, err := m.EmbedIDs(ids); err == nil {
			t.Errorf("EmbedIDs(%v): no error", ids)
		}
	}
}

func maps(in map[string]Tensor) map[string]Tensor {
	out := make(map[string]Tensor, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "model.safetensors") {
		t.Errorf("empty dir: err = %v", err)
	}
	// Without tokenizer.json and 1_Pooling the model still loads, from
	// vocab.txt and with mean pooling.
	for _, f := range []string{"config.json", "vocab.txt", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join("testdata", "tiny", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.pooling != PoolMean || m.Dim() != 32 {
		t.Errorf("pooling %q dim %d", m.pooling, m.Dim())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

// BenchmarkMiniLM measures the MiniLM-shaped forward pass (weights as in
// TestMiniLMShapedGolden) on sequences of 32 and 128 tokens, one at a
// time and 32 at a time.
func BenchmarkMiniLM(b *testing.B) {
	m, _ := miniLM(b, hasSIMD)
	for _, seq := range []int{32, 128} {
		for _, batch := range []int{1, 32} {
			b.Run(fmt.Sprintf("seq%d_batch%d_simd=%v", seq, batch, hasSIMD), func(b *testing.B) {
				ids := make([][]int, batch)
				for i := range ids {
					ids[i] = make([]int, seq)
					for j := range ids[i] {
						ids[i][j] = 5 + (i*31+j*7)%(m.cfg.VocabSize-5)
					}
				}
				for b.Loop() {
					if _, err := m.EmbedIDs(ids); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "sentences/s")
			})
		}
	}
}
