package bert

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// layer holds one encoder layer's weights; Linear weights are [out, in].
type layer struct {
	qkvW, attnW, interW, outW *linear
	qkvB                      []float32 // query, key and value stacked: [3H]
	attnB                     []float32 // attention output dense [H]
	ln1G, ln1B                []float32
	interB                    []float32 // [I]
	outB                      []float32 // [H]
	ln2G, ln2B                []float32
}

// Model is a BERT sentence encoder with its tokenizer and pooling. It is
// safe for concurrent use: the weights are only read.
type Model struct {
	cfg     Config
	pooling Pooling
	tok     *Tokenizer
	maxLen  int

	wordEmb, posEmb, typeEmb []float32
	embLNG, embLNB           []float32
	layers                   []layer
	simd                     bool // use the vector kernel

	// BatchSize is the most texts run through the network at once by
	// Embed; 32 unless changed before use.
	BatchSize int
}

// Files of a model directory.
const (
	ConfigFile      = "config.json"
	TokenizerFile   = "tokenizer.json"
	VocabFile       = "vocab.txt"
	WeightsFile     = "model.safetensors"
	PoolingFile     = "1_Pooling/config.json"
	requiredListing = "config.json, tokenizer.json (or vocab.txt), model.safetensors and 1_Pooling/config.json"
)

// Load reads a model directory laid out as on the Hugging Face Hub:
// config.json, tokenizer.json (or vocab.txt), model.safetensors and,
// optionally, 1_Pooling/config.json (mean pooling without it). The
// weights are read into memory once.
func Load(dir string) (*Model, error) {
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		return nil, fmt.Errorf("load model %s (needs %s): %w", dir, requiredListing, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	tok, err := LoadTokenizer(dir)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	pool, err := loadPooling(dir)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	data, err = os.ReadFile(filepath.Join(dir, WeightsFile))
	if err != nil {
		return nil, fmt.Errorf("load model %s (needs %s): %w", dir, requiredListing, err)
	}
	tensors, err := ReadSafetensors(data)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	m, err := New(cfg, pool, tok, tensors)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", dir, err)
	}
	return m, nil
}

// New builds a model from the tensors of a Hugging Face BertModel (names
// as "embeddings.word_embeddings.weight", with or without a "bert."
// prefix), checking every shape against cfg.
func New(cfg Config, pooling Pooling, tok *Tokenizer, tensors map[string]Tensor) (*Model, error) {
	return newModel(cfg, pooling, tok, tensors, hasSIMD)
}

// newModel is New with the choice of GEMM kernel: the vector one when
// simd is set, else the portable one.
func newModel(cfg Config, pooling Pooling, tok *Tokenizer, tensors map[string]Tensor, simd bool) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pooling != PoolMean && pooling != PoolCLS {
		return nil, fmt.Errorf("pooling %q, want mean or cls", pooling)
	}
	prefix := ""
	if _, ok := tensors["bert.embeddings.word_embeddings.weight"]; ok {
		prefix = "bert."
	}
	H, I := cfg.HiddenSize, cfg.IntermediateSize
	var missing []string
	get := func(name string, shape ...int) []float32 {
		t, ok := tensors[prefix+name]
		if !ok && strings.HasSuffix(name, "LayerNorm.weight") {
			t, ok = tensors[prefix+strings.TrimSuffix(name, "weight")+"gamma"]
		}
		if !ok && strings.HasSuffix(name, "LayerNorm.bias") {
			t, ok = tensors[prefix+strings.TrimSuffix(name, "bias")+"beta"]
		}
		if !ok {
			missing = append(missing, fmt.Sprintf("%s%s: missing", prefix, name))
			return nil
		}
		if fmt.Sprint(t.Shape) != fmt.Sprint(shape) {
			missing = append(missing, fmt.Sprintf("%s%s: shape %v, want %v", prefix, name, t.Shape, shape))
			return nil
		}
		return t.Data
	}
	m := &Model{cfg: cfg, pooling: pooling, tok: tok, BatchSize: 32, simd: simd}
	m.wordEmb = get("embeddings.word_embeddings.weight", cfg.VocabSize, H)
	m.posEmb = get("embeddings.position_embeddings.weight", cfg.MaxPositionEmbeddings, H)
	m.typeEmb = get("embeddings.token_type_embeddings.weight", cfg.TypeVocabSize, H)
	m.embLNG = get("embeddings.LayerNorm.weight", H)
	m.embLNB = get("embeddings.LayerNorm.bias", H)
	for l := range cfg.NumHiddenLayers {
		p := fmt.Sprintf("encoder.layer.%d.", l)
		var ly layer
		q, k, v := get(p+"attention.self.query.weight", H, H), get(p+"attention.self.key.weight", H, H), get(p+"attention.self.value.weight", H, H)
		qb, kb, vb := get(p+"attention.self.query.bias", H), get(p+"attention.self.key.bias", H), get(p+"attention.self.value.bias", H)
		qkv := append(append(append(make([]float32, 0, 3*H*H), q...), k...), v...)
		ly.qkvB = append(append(append(make([]float32, 0, 3*H), qb...), kb...), vb...)
		attnW, interW, outW := get(p+"attention.output.dense.weight", H, H), get(p+"intermediate.dense.weight", I, H), get(p+"output.dense.weight", H, I)
		ly.attnB = get(p+"attention.output.dense.bias", H)
		ly.ln1G, ly.ln1B = get(p+"attention.output.LayerNorm.weight", H), get(p+"attention.output.LayerNorm.bias", H)
		ly.interB = get(p+"intermediate.dense.bias", I)
		ly.outB = get(p+"output.dense.bias", H)
		ly.ln2G, ly.ln2B = get(p+"output.LayerNorm.weight", H), get(p+"output.LayerNorm.bias", H)
		if len(missing) == 0 {
			ly.qkvW = newLinear(qkv, 3*H, H, simd)
			ly.attnW = newLinear(attnW, H, H, simd)
			ly.interW = newLinear(interW, I, H, simd)
			ly.outW = newLinear(outW, H, I, simd)
		}
		m.layers = append(m.layers, ly)
	}
	if len(missing) > 0 {
		if len(missing) > 5 {
			missing = append(missing[:5], fmt.Sprintf("and %d more", len(missing)-5))
		}
		return nil, fmt.Errorf("weights: %s", strings.Join(missing, "; "))
	}
	m.maxLen = cfg.MaxPositionEmbeddings
	if tok != nil {
		if tok.MaxLen > 0 {
			m.maxLen = min(m.maxLen, tok.MaxLen)
		}
		if len(tok.tokens) > cfg.VocabSize {
			return nil, fmt.Errorf("tokenizer has %d ids, the model's vocabulary %d", len(tok.tokens), cfg.VocabSize)
		}
	}
	return m, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Dim is the dimension of the embeddings.
func (m *Model) Dim() int { return m.cfg.HiddenSize }

// MaxLen is the most tokens per text, [CLS] and [SEP] included; longer
// texts are truncated.
func (m *Model) MaxLen() int { return m.maxLen }

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *Tokenizer { return m.tok }

// Embed returns one L2-normalised vector per text. Texts longer than
// MaxLen tokens are truncated (the first MaxLen-2 word pieces are kept):
// callers that need all of a long text should chunk it first. Texts are
// run in batches of BatchSize, padded to the longest of the batch.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if m.tok == nil {
		return nil, fmt.Errorf("embed: the model has no tokenizer")
	}
	out := make([][]float32, 0, len(texts))
	bs := max(1, m.BatchSize)
	for start := 0; start < len(texts); start += bs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embed: %w", err)
		}
		batch := texts[start:min(start+bs, len(texts))]
		ids := make([][]int, len(batch))
		for i, t := range batch {
			ids[i] = m.tok.Encode(t, m.maxLen)
		}
		vecs, err := m.EmbedIDs(ids)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// EmbedIDs runs the network on token id sequences (each starting with
// [CLS] and ending with [SEP], at most MaxLen long) padded to the longest,
// and returns their pooled, L2-normalised vectors.
func (m *Model) EmbedIDs(ids [][]int) ([][]float32, error) {
	B := len(ids)
	if B == 0 {
		return nil, nil
	}
	S := 0
	for i, seq := range ids {
		if len(seq) == 0 || len(seq) > m.maxLen {
			return nil, fmt.Errorf("embed: sequence %d has %d tokens, want 1 to %d", i, len(seq), m.maxLen)
		}
		for _, id := range seq {
			if id < 0 || id >= m.cfg.VocabSize {
				return nil, fmt.Errorf("embed: sequence %d: token id %d outside the vocabulary", i, id)
			}
		}
		S = max(S, len(seq))
	}
	H := m.cfg.HiddenSize
	T := B * S
	x := make([]float32, T*H)
	pad := 0
	if m.tok != nil {
		pad = m.tok.PAD
	}
	for b, seq := range ids {
		for s := range S {
			id := pad
			if s < len(seq) {
				id = seq[s]
			}
			row := x[(b*S+s)*H : (b*S+s+1)*H]
			we, pe, te := m.wordEmb[id*H:(id+1)*H], m.posEmb[s*H:(s+1)*H], m.typeEmb[:H]
			for h := range row {
				row[h] = we[h] + pe[h] + te[h]
			}
		}
	}
	eps := float32(m.cfg.LayerNormEps)
	layerNorm(x, H, m.embLNG, m.embLNB, eps)
	lens := make([]int, B)
	for b, seq := range ids {
		lens[b] = len(seq)
	}
	w := newWork(T, H, m.cfg.IntermediateSize)
	for i := range m.layers {
		m.encoderLayer(&m.layers[i], x, w, B, S, lens, eps)
	}
	out := make([][]float32, B)
	for b := range B {
		v := make([]float32, H)
		if m.pooling == PoolCLS {
			copy(v, x[b*S*H:(b*S+1)*H])
		} else {
			sum := make([]float64, H)
			for s := range lens[b] {
				for h, xv := range x[(b*S+s)*H : (b*S+s+1)*H] {
					sum[h] += float64(xv)
				}
			}
			for h := range v {
				v[h] = float32(sum[h] / float64(lens[b]))
			}
		}
		normalize(v)
		out[b] = v
	}
	return out, nil
}

// work holds the scratch buffers of one forward pass.
type work struct {
	qkv, ctx, tmp, inter []float32
}

func newWork(T, H, I int) *work {
	return &work{
		qkv:   make([]float32, T*3*H),
		ctx:   make([]float32, T*H),
		tmp:   make([]float32, T*H),
		inter: make([]float32, T*I),
	}
}

// encoderLayer runs one BERT layer on x [B*S, H] in place.
func (m *Model) encoderLayer(ly *layer, x []float32, w *work, B, S int, lens []int, eps float32) {
	H := m.cfg.HiddenSize
	T := B * S
	ly.qkvW.apply(w.qkv, x, T, ly.qkvB)
	m.attention(w.qkv, w.ctx, B, S, lens)
	ly.attnW.apply(w.tmp, w.ctx, T, ly.attnB)
	for i, v := range w.tmp {
		x[i] += v
	}
	layerNorm(x, H, ly.ln1G, ly.ln1B, eps)
	ly.interW.apply(w.inter, x, T, ly.interB)
	gelu(w.inter)
	ly.outW.apply(w.tmp, w.inter, T, ly.outB)
	for i, v := range w.tmp {
		x[i] += v
	}
	layerNorm(x, H, ly.ln2G, ly.ln2B, eps)
}

// attention computes multi-head self-attention from qkv [B*S, 3H] (the
// query, key and value of each token side by side) into ctx [B*S, H].
// Keys past a sequence's length (padding) get no weight. The (sequence,
// head) pairs are shared out to GOMAXPROCS goroutines.
func (m *Model) attention(qkv, ctx []float32, B, S int, lens []int) {
	H, nh := m.cfg.HiddenSize, m.cfg.NumAttentionHeads
	d := H / nh
	scale := float32(1 / math.Sqrt(float64(d)))
	jobs := B * nh
	workers := min(runtime.GOMAXPROCS(0), jobs)
	var wg sync.WaitGroup
	next := make(chan int, jobs)
	for j := range jobs {
		next <- j
	}
	close(next)
	if m.simd {
		for range workers {
			wg.Go(func() { m.attentionSIMD(qkv, ctx, S, lens, next) })
		}
		wg.Wait()
		return
	}
	for range workers {
		wg.Go(func() {
			q := make([]float32, S*d)
			k := make([]float32, S*d)
			v := make([]float32, S*d) // transposed: [d, S]
			scores := make([]float32, S)
			for job := range next {
				b, h := job/nh, job%nh
				L := lens[b]
				for s := range L {
					row := qkv[(b*S+s)*3*H:]
					copy(q[s*d:(s+1)*d], row[h*d:(h+1)*d])
					copy(k[s*d:(s+1)*d], row[H+h*d:H+(h+1)*d])
					for e := range d {
						v[e*S+s] = row[2*H+h*d+e]
					}
				}
				// Padded query rows are computed too (their output is
				// discarded by pooling) so that every row of ctx is set.
				for s := range S {
					var qs []float32
					if s < L {
						qs = q[s*d : (s+1)*d]
					} else {
						row := qkv[(b*S+s)*3*H:]
						qs = row[h*d : (h+1)*d]
					}
					mx := float32(math.Inf(-1))
					for t := range L {
						sc := dot(qs, k[t*d:(t+1)*d]) * scale
						scores[t] = sc
						mx = max(mx, sc)
					}
					var sum float32
					for t := range L {
						e := float32(math.Exp(float64(scores[t] - mx)))
						scores[t] = e
						sum += e
					}
					inv := 1 / sum
					out := ctx[(b*S+s)*H+h*d : (b*S+s)*H+(h+1)*d]
					for e := range d {
						out[e] = dot(scores[:L], v[e*S:e*S+L]) * inv
					}
				}
			}
		})
	}
	wg.Wait()
}

// attentionSIMD is the body of attention's workers with the vector
// kernel: scores = Q·Kᵀ and context = P·V, K and V packed in panels.
func (m *Model) attentionSIMD(qkv, ctx []float32, S int, lens []int, next <-chan int) {
	H, nh := m.cfg.HiddenSize, m.cfg.NumAttentionHeads
	d := H / nh
	scale := float32(1 / math.Sqrt(float64(d)))
	npS, npD := (S+panelW-1)/panelW, (d+panelW-1)/panelW
	k := make([]float32, S*d)
	kp := make([]float32, npS*d*panelW)
	vp := make([]float32, npD*S*panelW)
	scores := make([]float32, S*S)
	out := make([]float32, S*d)
	for job := range next {
		b, h := job/nh, job%nh
		L := lens[b]
		base := b * S * 3 * H
		for s := range L {
			copy(k[s*d:(s+1)*d], qkv[base+s*3*H+H+h*d:])
		}
		packRows(kp, k, L, d)
		packCols(vp, qkv[base+2*H+h*d:], L, d, 3*H)
		np := (L + panelW - 1) / panelW
		mulPacked(scores, L, qkv[base+h*d:], 3*H, 0, S, kp, L, d, 0, np)
		for s := range S {
			row := scores[s*L : (s+1)*L]
			mx := float32(math.Inf(-1))
			for t := range row {
				row[t] *= scale
				mx = max(mx, row[t])
			}
			var sum float32
			for t, v := range row {
				e := exp32(v - mx)
				row[t] = e
				sum += e
			}
			inv := 1 / sum
			for t := range row {
				row[t] *= inv
			}
		}
		mulPacked(out, d, scores, L, 0, S, vp, d, L, 0, npD)
		for s := range S {
			copy(ctx[(b*S+s)*H+h*d:(b*S+s)*H+(h+1)*d], out[s*d:(s+1)*d])
		}
	}
}

// layerNorm normalises each row of x (width n) to zero mean and unit
// variance, then scales by g and shifts by b.
func layerNorm(x []float32, n int, g, b []float32, eps float32) {
	for r := 0; r+n <= len(x); r += n {
		row := x[r : r+n]
		var mean float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(n)
		var vr float64
		for _, v := range row {
			dv := float64(v) - mean
			vr += dv * dv
		}
		vr /= float64(n)
		inv := 1 / math.Sqrt(vr+float64(eps))
		for i, v := range row {
			row[i] = float32((float64(v)-mean)*inv)*g[i] + b[i]
		}
	}
}

// gelu applies the exact (erf) GELU, x·Φ(x) = x/2·(1+erf(x/√2)), in
// place, over GOMAXPROCS goroutines, with erf32 (error < 1e-6) rather
// than the float64 math.Erf, which took a sixth of the forward pass.
func gelu(x []float32) {
	workers := min(runtime.GOMAXPROCS(0), len(x)/4096+1)
	chunk := (len(x) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(x); lo += chunk {
		part := x[lo:min(lo+chunk, len(x))]
		wg.Go(func() {
			for i, v := range part {
				part[i] = 0.5 * v * (1 + erf32(v*(1/math.Sqrt2)))
			}
		})
	}
	wg.Wait()
}

// normalize scales v to unit length; a zero vector stays zero.
func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}
