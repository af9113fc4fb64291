package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVaultWithoutItsEmbedder: CtxVault's `init --embedding-model
// all-MiniLM-L6-v2` pins the builtin embedder; while its model is not
// installed, index and query fail (exit status 1) saying so and how to
// install it, query --lexical searches words only and says what it left
// out, and once the model is installed (from a folder: the test's tiny
// model) both work with vectors.
func TestVaultWithoutItsEmbedder(t *testing.T) {
	tiny := tinyModelDir(t)
	_, project := vaultEnv(t)
	code, out, errOut := ctxkit(t, "vault", "init", "kb", "--embedding-model", "all-MiniLM-L6-v2")
	if code != 0 || !strings.Contains(out, "embedding model: builtin:all-MiniLM-L6-v2") ||
		!strings.Contains(out, "not installed yet") || !strings.Contains(out, "ctxkit model pull all-MiniLM-L6-v2") {
		t.Fatalf("init: %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(project, ".ctxkit", "vaults", "kb")
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte("# Plan\n\nCut cloud costs by fifteen percent.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"vault", "index", "kb"}, {"vault", "query", "kb", "cloud"}, {"vault", "reindex", "kb"}} {
		code, out, errOut := ctxkit(t, args...)
		if code == 0 || !strings.Contains(errOut, "builtin:all-MiniLM-L6-v2") || !strings.Contains(errOut, "not available") ||
			!strings.Contains(errOut, "ctxkit model pull all-MiniLM-L6-v2") {
			t.Errorf("%v: %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, errOut = ctxkit(t, "vault", "query", "kb", "cloud", "--lexical", "--json")
	var res struct {
		Results []any  `json:"results"`
		Mode    string `json:"mode"`
		Warning string `json:"warning"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Mode != "lexical" || !strings.Contains(res.Warning, "not available") {
		t.Errorf("query --lexical: %d %v\n%s%s", code, err, out, errOut)
	}
	// Moving to a model that is not installed is refused, the vault
	// unchanged.
	if code, _, errOut := ctxkit(t, "vault", "reindex", "kb", "--embedding-model", "BAAI/bge-small-en-v1.5"); code == 0 ||
		!strings.Contains(errOut, "ctxkit model pull BAAI/bge-small-en-v1.5") {
		t.Errorf("reindex to a model not installed: %d %s", code, errOut)
	}
	if code, _, errOut := ctxkit(t, "vault", "reindex", "kb", "--embedding-model", "all-mpnet-base-v2"); code == 0 ||
		!strings.Contains(errOut, "MPNet") {
		t.Errorf("reindex to an MPNet model: %d %s", code, errOut)
	}

	if code, out, errOut := ctxkit(t, "model", "pull", "sentence-transformers/all-MiniLM-L6-v2", "--from", tiny); code != 0 {
		t.Fatalf("pull --from: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := ctxkit(t, "vault", "index", "kb"); code != 0 || !strings.Contains(out, "embedder: builtin:all-MiniLM-L6-v2") {
		t.Errorf("index with the model: %d %s %s", code, out, errOut)
	}
	code, out, errOut = ctxkit(t, "vault", "query", "kb", "cloud", "--limit", "1", "--json")
	res.Warning = ""
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Mode != "hybrid" || len(res.Results) != 1 || res.Warning != "" {
		t.Errorf("query --limit 1 with the model: %d %v\n%s%s", code, err, out, errOut)
	}
	if code, _, errOut := ctxkit(t, "vault", "query", "kb", "cloud", "--limit", "101"); code == 0 || !strings.Contains(errOut, "out of range") {
		t.Errorf("--limit 101: %d %s", code, errOut)
	}
}

// TestProgressBar: the download progress redraws one line per file with
// its percentage and bytes, only when the percentage moves, and ends the
// line when the file is whole. A command whose standard error is not a
// terminal draws none (TestModelPullFromHub's pull prints no \r).
func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := progressBar(&b)
	p("model.safetensors", 0, 2048)
	p("model.safetensors", 1024, 2048)
	p("model.safetensors", 1025, 2048) // still 50%: not redrawn
	p("model.safetensors", 2048, 2048)
	p("vocab.txt", 10, -1)
	want := "\r\033[Kmodel.safetensors      [                              ]   0% 0 B/2.0 KiB" +
		"\r\033[Kmodel.safetensors      [===============               ]  50% 1.0 KiB/2.0 KiB" +
		"\r\033[Kmodel.safetensors      [==============================] 100% 2.0 KiB/2.0 KiB\n" +
		"\r\033[Kvocab.txt 10 B"
	if b.String() != want {
		t.Errorf("progress:\n%q\nwant\n%q", b.String(), want)
	}
	if progressTerminal(IO{Err: &b}) != nil {
		t.Error("a buffer is a terminal")
	}
}
