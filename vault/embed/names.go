package embed

import (
	"fmt"
	"strings"
)

// Model is a sentence-transformers model known by name: people (and
// CtxVault, whose default is all-MiniLM-L6-v2) name embedders by these Hub
// names rather than by ctxkit's specs.
type Model struct {
	// Repo is the model's Hugging Face repo, as `ctxkit model pull` takes it.
	Repo string
	// Dims is the dimension of its vectors.
	Dims int
	// Arch is the architecture the builtin embedder would need; "" for the
	// BERT family, which it runs.
	Arch string
}

// Served reports whether the builtin embedder runs the model.
func (m Model) Served() bool { return m.Arch == "" }

// Name is the model's name without its owner: its folder under
// $CTXKIT_HOME/models and the MODEL of its builtin spec.
func (m Model) Name() string { return m.Repo[strings.LastIndex(m.Repo, "/")+1:] }

// PullName is what `ctxkit model pull` takes for the model: the short name
// for sentence-transformers' own models, else OWNER/NAME.
func (m Model) PullName() string {
	if strings.HasPrefix(m.Repo, "sentence-transformers/") {
		return m.Name()
	}
	return m.Repo
}

// Models are the sentence-transformers names ctxkit maps to a spec (Resolve),
// in the order messages list them. The builtin embedder (package bert) runs
// BERT encoders with a WordPiece tokenizer and mean or CLS pooling; MPNet,
// RoBERTa, DistilBERT and XLM-R models need another forward pass or
// tokenizer, and are named only to say so.
var Models = []Model{
	{Repo: "sentence-transformers/all-MiniLM-L6-v2", Dims: 384},
	{Repo: "sentence-transformers/all-MiniLM-L12-v2", Dims: 384},
	{Repo: "sentence-transformers/paraphrase-MiniLM-L6-v2", Dims: 384},
	{Repo: "sentence-transformers/paraphrase-MiniLM-L3-v2", Dims: 384},
	{Repo: "sentence-transformers/multi-qa-MiniLM-L6-cos-v1", Dims: 384},
	{Repo: "BAAI/bge-small-en-v1.5", Dims: 384},
	{Repo: "BAAI/bge-base-en-v1.5", Dims: 768},
	{Repo: "thenlper/gte-small", Dims: 384},
	{Repo: "intfloat/e5-small-v2", Dims: 384},
	{Repo: "sentence-transformers/all-mpnet-base-v2", Dims: 768, Arch: "MPNet"},
	{Repo: "sentence-transformers/multi-qa-mpnet-base-dot-v1", Dims: 768, Arch: "MPNet"},
	{Repo: "sentence-transformers/paraphrase-mpnet-base-v2", Dims: 768, Arch: "MPNet"},
	{Repo: "sentence-transformers/all-distilroberta-v1", Dims: 768, Arch: "RoBERTa"},
	{Repo: "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", Dims: 384, Arch: "XLM-R (its tokenizer)"},
	{Repo: "sentence-transformers/distiluse-base-multilingual-cased-v2", Dims: 512, Arch: "DistilBERT"},
}

// LookupModel finds a known model by its repo ("BAAI/bge-small-en-v1.5")
// or its name alone ("all-MiniLM-L6-v2"), case-insensitively.
func LookupModel(name string) (Model, bool) {
	for _, m := range Models {
		if strings.EqualFold(name, m.Repo) || strings.EqualFold(name, m.Name()) {
			return m, true
		}
	}
	return Model{}, false
}

// servedNames lists the models the builtin embedder runs, for messages.
func servedNames() string {
	var names []string
	for _, m := range Models {
		if m.Served() {
			names = append(names, m.Name())
		}
	}
	return strings.Join(names, ", ")
}

// Resolve turns what a user calls an embedder into its spec, the one form
// a vault pins: a spec ("none", "builtin[:MODEL]", "ollama:MODEL",
// "openai:MODEL", the provider in any case) written canonically, or the
// name of a sentence-transformers model the builtin embedder runs
// ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2",
// "BAAI/bge-small-en-v1.5", also after "builtin:"), which becomes
// "builtin:NAME". A known model of an architecture the builtin embedder
// cannot run, and a name that is neither, are refused with what can be
// served.
func Resolve(name string) (string, error) {
	name = strings.TrimSpace(name)
	if m, ok := LookupModel(name); ok {
		return builtinSpec(m)
	}
	provider, model, hasModel := strings.Cut(name, ":")
	if !hasModel && strings.Contains(name, "/") {
		return "", fmt.Errorf("embedding model %q: not a model ctxkit knows; the builtin embedder runs %s. "+
			"For another BERT-family model: ctxkit model pull %s, then --embedding-model builtin:%s",
			name, servedNames(), name, name[strings.LastIndex(name, "/")+1:])
	}
	s, err := ParseSpec(name)
	if err != nil {
		if !hasModel && provider != "" {
			return "", fmt.Errorf("embedding model %q: want none, builtin[:MODEL], ollama:MODEL or openai:MODEL, "+
				"or a sentence-transformers model the builtin embedder runs: %s", name, servedNames())
		}
		return "", err
	}
	if hasModel && model == "" {
		return "", fmt.Errorf("embedding model %q: name the model after the colon, or write %s", name, s.Provider)
	}
	if s.Provider == Builtin && s.Model != "" {
		if m, ok := LookupModel(s.Model); ok {
			return builtinSpec(m)
		}
	}
	if s.Provider == Builtin && strings.Contains(s.Model, "/") {
		owner, local, _ := strings.Cut(s.Model, "/")
		if owner == "" || local == "" || strings.Contains(local, "/") {
			return "", fmt.Errorf("embedding model %q: a builtin model is NAME or OWNER/NAME", name)
		}
		s.Model = local // OWNER/NAME installs as NAME
	}
	return s.String(), nil
}

// builtinSpec is the spec of a known model, or why the builtin embedder
// cannot run it.
func builtinSpec(m Model) (string, error) {
	if !m.Served() {
		return "", fmt.Errorf("embedding model %q is a %s model, which the builtin embedder cannot run; it runs %s "+
			"(or serve %s with Ollama or an OpenAI-compatible server: ollama:MODEL, openai:MODEL)",
			m.Repo, m.Arch, servedNames(), m.Name())
	}
	return Builtin + ":" + m.Name(), nil
}

// PullName is what `ctxkit model pull` takes to install the builtin model
// of a spec's MODEL (DefaultBuiltinModel for "").
func PullName(model string) string {
	if model == "" {
		model = DefaultBuiltinModel
	}
	if m, ok := LookupModel(model); ok {
		return m.PullName()
	}
	return model
}
