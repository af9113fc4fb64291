// Package berttest makes small BERT models for tests, in the layout the
// builtin embedder reads (package bert): config.json, vocab.txt,
// model.safetensors and 1_Pooling/config.json.
//
// A model with random weights cannot know that "financial" and "budget"
// mean related things, so a test of a meaning-based search cannot use one.
// ConceptModel builds a model whose word embeddings are set by hand
// instead: each group of words (a "concept") shares one direction, every
// other word (and [CLS], [SEP], [UNK]) is the zero vector, and the encoder
// layer's weights are zero, so that a layer adds nothing and the sentence
// vector is, after BERT's LayerNorm and mean pooling, the mix of the
// concepts its words name. Two texts that share no word but name the same
// concepts get close vectors; that is what the model knows, and all it
// knows. It proves that the path from a written document to a
// meaning-based query works (tokenizer, weights, forward pass, pooling,
// vectors stored, pinned and searched), not the quality of a real model.
package berttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxkit/ctxkit/vault/embed/bert"
)

// QuickStartConcepts are the concepts of CtxVault's Quick Start example:
// its note ("need to cut cloud costs by 15%") and its question ("financial
// constraints from last week") share meanings but no word, and three
// unrelated topics give the note rivals.
func QuickStartConcepts() [][]string {
	return [][]string{
		{"financial", "budget", "costs", "pricing", "money"},
		{"constraints", "cut", "lower", "limit"},
		{"last", "week", "q2", "monday"},
		{"lemon", "cake", "sugar", "bake"},
		{"football", "match", "goal", "team"},
		{"rain", "weather", "sunny", "forecast"},
	}
}

// ConceptModel writes into dir a one-layer BERT model whose hidden size is
// len(concepts)+1 (at least 4 heads' worth), where every word of
// concepts[i] (lower case, one word-piece each) embeds as direction i.
func ConceptModel(dir string, concepts [][]string) error {
	special := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	vocab := append([]string(nil), special...)
	dimOf := map[string]int{}
	for i, words := range concepts {
		for _, w := range words {
			if w != strings.ToLower(w) || strings.ContainsAny(w, " \t\n") {
				return fmt.Errorf("berttest: %q: words are lower case, without spaces", w)
			}
			if _, dup := dimOf[w]; dup {
				return fmt.Errorf("berttest: %q is in two concepts", w)
			}
			dimOf[w] = i
			vocab = append(vocab, w)
		}
	}
	const heads = 4
	h := (len(concepts) + 1 + heads - 1) / heads * heads // a spare direction no word has
	cfg := bert.Config{VocabSize: len(vocab), HiddenSize: h, NumHiddenLayers: 1, NumAttentionHeads: heads,
		IntermediateSize: h, MaxPositionEmbeddings: 128, TypeVocabSize: 2, LayerNormEps: 1e-12, HiddenAct: "gelu"}
	zeros := func(shape ...int) bert.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return bert.Tensor{Shape: shape, Data: make([]float32, n)}
	}
	ones := func(n int) bert.Tensor {
		t := zeros(n)
		for i := range t.Data {
			t.Data[i] = 1
		}
		return t
	}
	words := zeros(len(vocab), h)
	for id, w := range vocab {
		if d, ok := dimOf[w]; ok {
			words.Data[id*h+d] = 1
		}
	}
	tensors := map[string]bert.Tensor{
		"embeddings.word_embeddings.weight":       words,
		"embeddings.position_embeddings.weight":   zeros(cfg.MaxPositionEmbeddings, h),
		"embeddings.token_type_embeddings.weight": zeros(cfg.TypeVocabSize, h),
		"embeddings.LayerNorm.weight":             ones(h),
		"embeddings.LayerNorm.bias":               zeros(h),
	}
	p := "encoder.layer.0."
	for _, name := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
		tensors[p+name+".weight"], tensors[p+name+".bias"] = zeros(h, h), zeros(h)
	}
	tensors[p+"intermediate.dense.weight"], tensors[p+"intermediate.dense.bias"] = zeros(h, h), zeros(h)
	tensors[p+"output.dense.weight"], tensors[p+"output.dense.bias"] = zeros(h, h), zeros(h)
	for _, ln := range []string{"attention.output.LayerNorm", "output.LayerNorm"} {
		tensors[p+ln+".weight"], tensors[p+ln+".bias"] = ones(h), zeros(h)
	}
	weights, err := bert.WriteSafetensors(tensors)
	if err != nil {
		return err
	}
	config, err := json.Marshal(map[string]any{"architectures": []string{"BertModel"}, "model_type": "bert",
		"vocab_size": cfg.VocabSize, "hidden_size": h, "num_hidden_layers": 1, "num_attention_heads": heads,
		"intermediate_size": h, "max_position_embeddings": cfg.MaxPositionEmbeddings, "type_vocab_size": 2,
		"layer_norm_eps": cfg.LayerNormEps, "hidden_act": "gelu"})
	if err != nil {
		return err
	}
	pooling, err := json.Marshal(map[string]any{"word_embedding_dimension": h, "pooling_mode_mean_tokens": true})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{bert.ConfigFile: config, bert.VocabFile: []byte(strings.Join(vocab, "\n") + "\n"),
		bert.WeightsFile: weights, bert.PoolingFile: pooling} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
