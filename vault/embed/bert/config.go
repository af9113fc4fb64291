package bert

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Config is the part of a Hugging Face BERT config.json the forward pass
// needs.
type Config struct {
	VocabSize             int     `json:"vocab_size"`
	HiddenSize            int     `json:"hidden_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	IntermediateSize      int     `json:"intermediate_size"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	TypeVocabSize         int     `json:"type_vocab_size"`
	LayerNormEps          float64 `json:"layer_norm_eps"`
	HiddenAct             string  `json:"hidden_act"`
}

// ParseConfig reads and checks a config.json. A missing layer_norm_eps is
// BERT's 1e-12, a missing hidden_act "gelu" and a missing type_vocab_size 2.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("config.json: %w", err)
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-12
	}
	if c.HiddenAct == "" {
		c.HiddenAct = "gelu"
	}
	if c.TypeVocabSize == 0 {
		c.TypeVocabSize = 2
	}
	return c, c.Validate()
}

// Validate checks that the sizes are positive, bounded and consistent.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"intermediate_size", c.IntermediateSize}, {"max_position_embeddings", c.MaxPositionEmbeddings},
		{"type_vocab_size", c.TypeVocabSize},
	} {
		if f.v <= 0 || f.v > 1<<20 {
			return fmt.Errorf("config.json: %s = %d", f.name, f.v)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("config.json: hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.HiddenAct != "gelu" {
		return fmt.Errorf("config.json: hidden_act %q, only gelu (erf) is supported", c.HiddenAct)
	}
	if !(c.LayerNormEps > 0 && c.LayerNormEps < 1) {
		return fmt.Errorf("config.json: layer_norm_eps = %g", c.LayerNormEps)
	}
	return nil
}

// Pooling is how token vectors become one sentence vector.
type Pooling string

// Pooling modes of sentence-transformers' 1_Pooling/config.json.
const (
	PoolMean Pooling = "mean" // average over the real (unpadded) tokens
	PoolCLS  Pooling = "cls"  // the [CLS] token's vector
)

// ParsePooling reads a sentence-transformers 1_Pooling/config.json.
func ParsePooling(data []byte) (Pooling, error) {
	var p struct {
		CLS     bool `json:"pooling_mode_cls_token"`
		Mean    bool `json:"pooling_mode_mean_tokens"`
		Max     bool `json:"pooling_mode_max_tokens"`
		SqrtLen bool `json:"pooling_mode_mean_sqrt_len_tokens"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return "", fmt.Errorf("pooling config: %w", err)
	}
	switch {
	case p.Max || p.SqrtLen || (p.CLS && p.Mean):
		return "", fmt.Errorf("pooling config: only one of mean or cls pooling is supported")
	case p.CLS:
		return PoolCLS, nil
	case p.Mean:
		return PoolMean, nil
	}
	return "", fmt.Errorf("pooling config: no pooling mode set")
}

// loadPooling reads dir/1_Pooling/config.json; without it, mean pooling.
func loadPooling(dir string) (Pooling, error) {
	data, err := os.ReadFile(filepath.Join(dir, "1_Pooling", "config.json"))
	if os.IsNotExist(err) {
		return PoolMean, nil
	}
	if err != nil {
		return "", fmt.Errorf("load pooling: %w", err)
	}
	return ParsePooling(data)
}
