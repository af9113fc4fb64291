package tinymodel

import (
	"fmt"
	"io"
	"math/rand/v2"
)

// The model's shape.
const (
	// ContextLength is the trained context (llama.context_length): Ollama
	// loads the model at no more than this, whatever num_ctx asks.
	ContextLength = 8192
	// Name is general.name.
	Name = "ctxkit-tiny"

	layers  = 2
	hidden  = 64
	heads   = 4
	ffn     = 128
	normEps = 1e-5
	seed1   = 0x63_74_78_6b_69_74 // "ctxkit"
	seed2   = 19
)

// ChatTemplate is the model's chat format (ChatML) as an Ollama Modelfile
// TEMPLATE: each message as <|im_start|>role\ncontent<|im_end|>\n, then the
// opening of the assistant's turn.
const ChatTemplate = `{{- range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
`

// WriteGGUF writes the model to w as a GGUF v3 file; the bytes are the
// same on every call.
func WriteGGUF(w io.Writer) error {
	v := vocab()
	types := make([]int32, len(v.tokens))
	for i := range types {
		types[i] = 1 // normal
		if i >= v.firstControl {
			types[i] = 3 // control
		}
	}
	merges := make([]string, len(v.merges))
	for i, m := range v.merges {
		merges[i] = m[0] + " " + m[1]
	}
	meta := []metaKV{
		{"general.architecture", "llama"},
		{"general.name", Name},
		{"general.file_type", uint32(0)}, // all F32
		{"general.alignment", uint32(ggufAlignment)},
		{"llama.context_length", uint32(ContextLength)},
		{"llama.embedding_length", uint32(hidden)},
		{"llama.block_count", uint32(layers)},
		{"llama.feed_forward_length", uint32(ffn)},
		{"llama.attention.head_count", uint32(heads)},
		{"llama.attention.head_count_kv", uint32(heads)},
		{"llama.attention.layer_norm_rms_epsilon", float32(normEps)},
		{"llama.rope.dimension_count", uint32(hidden / heads)},
		{"llama.rope.freq_base", float32(10000)},
		{"llama.vocab_size", uint32(len(v.tokens))},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "gpt-2"},
		{"tokenizer.ggml.tokens", v.tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", merges},
		{"tokenizer.ggml.bos_token_id", uint32(v.bos)},
		{"tokenizer.ggml.eos_token_id", uint32(v.eos)},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.ggml.add_eos_token", false},
	}
	if err := writeGGUF(w, meta, weights(len(v.tokens))); err != nil {
		return fmt.Errorf("tinymodel: %w", err)
	}
	return nil
}

// weights returns the model's tensors for a vocabulary of n tokens:
// uniform random values from a fixed seed, norms at 1.
func weights(n int) []tensor {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	random := func(name string, dims ...uint64) tensor {
		size := uint64(1)
		for _, d := range dims {
			size *= d
		}
		data := make([]float32, size)
		for i := range data {
			// 24 random bits to [-0.05, 0.05).
			data[i] = (float32(rng.Uint64()>>40)/(1<<24) - 0.5) / 10
		}
		return tensor{name: name, dims: dims, data: data}
	}
	ones := func(name string) tensor {
		data := make([]float32, hidden)
		for i := range data {
			data[i] = 1
		}
		return tensor{name: name, dims: []uint64{hidden}, data: data}
	}
	ts := []tensor{random("token_embd.weight", hidden, uint64(n))}
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			ones(p+"attn_norm.weight"),
			random(p+"attn_q.weight", hidden, hidden),
			random(p+"attn_k.weight", hidden, hidden),
			random(p+"attn_v.weight", hidden, hidden),
			random(p+"attn_output.weight", hidden, hidden),
			ones(p+"ffn_norm.weight"),
			random(p+"ffn_gate.weight", hidden, ffn),
			random(p+"ffn_up.weight", hidden, ffn),
			random(p+"ffn_down.weight", ffn, hidden),
		)
	}
	return append(ts, ones("output_norm.weight"), random("output.weight", hidden, uint64(n)))
}
