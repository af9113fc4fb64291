package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tinyModelDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "vault", "embed", "bert", "testdata", "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestModelFromFolder(t *testing.T) {
	tiny := tinyModelDir(t)
	root, _ := vaultEnv(t)
	code, out, errOut := ctxkit(t, "model", "pull", "tiny", "--from", tiny)
	if code != 0 || !strings.Contains(out, "installed tiny from "+tiny) {
		t.Fatalf("pull --from: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "data", "models", "tiny", "1_Pooling", "config.json")); err != nil {
		t.Error(err)
	}
	code, out, _ = ctxkit(t, "model", "list")
	if code != 0 || !strings.HasPrefix(out, "tiny\t") || !strings.Contains(out, "32 dims") || strings.Contains(out, "incomplete") {
		t.Errorf("list: %s", out)
	}
	code, out, errOut = ctxkit(t, "model", "embed", "tiny", "Cut cloud costs by 15%!", "Financial constraints")
	var vectors [][]float32
	if err := json.Unmarshal([]byte(out), &vectors); code != 0 || err != nil {
		t.Fatalf("embed: %d %v\n%s%s", code, err, out, errOut)
	}
	if len(vectors) != 2 || len(vectors[0]) != 32 || len(vectors[1]) != 32 {
		t.Fatalf("embed: %d vectors", len(vectors))
	}
	var n float64
	for _, x := range vectors[0] {
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Errorf("|v|² = %v", n)
	}
	if code, out, _ := ctxkit(t, "model", "rm", "tiny"); code != 0 || !strings.Contains(out, "removed") {
		t.Errorf("rm: %d %s", code, out)
	}
	if code, out, _ := ctxkit(t, "model", "list"); code != 0 || !strings.Contains(out, "no models in") {
		t.Errorf("list after rm: %s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "rm", "tiny"}, "not installed"},
		{[]string{"model", "embed", "tiny", "x"}, "ctxkit model pull tiny"},
		{[]string{"model", "pull", "../x", "--from", tiny}, "not a valid repo name"},
		{[]string{"model", "pull", "tiny", "--from", root}, "missing config.json"},
	} {
		if code, _, errOut := ctxkit(t, tc.args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %d %s", tc.args, code, errOut)
		}
	}
}

func TestModelPullFromHub(t *testing.T) {
	tiny := tinyModelDir(t)
	_, _ = vaultEnv(t)
	files := map[string]string{
		"/acme/tiny-bert/resolve/v1/config.json":           "config.json",
		"/acme/tiny-bert/resolve/v1/vocab.txt":             "vocab.txt",
		"/acme/tiny-bert/resolve/v1/model.safetensors":     "model.safetensors",
		"/acme/tiny-bert/resolve/v1/1_Pooling/config.json": "1_Pooling/config.json",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		data, err := os.ReadFile(filepath.Join(tiny, filepath.FromSlash(name)))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("X-Repo-Commit", "abc123")
		if name == "model.safetensors" {
			s := sha256.Sum256(data)
			w.Header().Set("X-Linked-Etag", `"`+hex.EncodeToString(s[:])+`"`)
		}
		w.Write(data)
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Setenv("HF_TOKEN", "")
	code, out, errOut := ctxkit(t, "model", "pull", "acme/tiny-bert", "--revision", "v1")
	if code != 0 || !strings.Contains(out, "installed tiny-bert from acme/tiny-bert@v1 (commit abc123)") || !strings.Contains(out, "sha256 checked: model.safetensors") {
		t.Fatalf("pull: %d %s %s", code, out, errOut)
	}
	if strings.Contains(errOut, "\r") || strings.Contains(errOut, "%") {
		t.Errorf("a pull whose standard error is not a terminal drew progress: %q", errOut)
	}
	if code, out, _ := ctxkit(t, "model", "embed", "tiny-bert", "hello"); code != 0 || !strings.HasPrefix(out, "[\n  [") {
		t.Errorf("embed: %d %s", code, out)
	}

	srv.Close()
	code, _, errOut = ctxkit(t, "model", "pull", "all-MiniLM-L6-v2")
	if code == 0 || !strings.Contains(errOut, "cannot reach") || !strings.Contains(errOut, "--from FOLDER") || !strings.Contains(errOut, filepath.Join("models", "all-MiniLM-L6-v2")) {
		t.Errorf("offline: %d %s", code, errOut)
	}
}
