package hub

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHub serves model repos in the Hub's layout: resolve answers with
// X-Repo-Commit, ETag and, for LFS files, X-Linked-Etag and a redirect to
// a second server, the CDN, which honours Range requests.
type fakeHub struct {
	hub, cdn *httptest.Server
	// repos maps "owner/name" to its files.
	repos map[string]map[string][]byte
	// lfs holds the names served from the CDN.
	lfs map[string]bool
	// badSHA is announced instead of the real sha256 of the LFS files.
	badSHA string
	// gated repos want "Bearer "+token.
	gated map[string]string
	// truncate cuts the next CDN answer after this many bytes.
	truncate int
	// ignoreRange makes the CDN answer every request with the whole file.
	ignoreRange bool

	mu        sync.Mutex
	hubAuth   []string // Authorization headers seen by the Hub
	cdnAuth   []string
	cdnRanges []string
	blobs     map[string][]byte
}

func newFakeHub(t *testing.T) *fakeHub {
	f := &fakeHub{repos: map[string]map[string][]byte{}, lfs: map[string]bool{"model.safetensors": true},
		gated: map[string]string{}, blobs: map[string][]byte{}}
	f.cdn = httptest.NewServer(http.HandlerFunc(f.serveCDN))
	f.hub = httptest.NewServer(http.HandlerFunc(f.serveHub))
	t.Cleanup(f.cdn.Close)
	t.Cleanup(f.hub.Close)
	return f
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (f *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hubAuth = append(f.hubAuth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	// /OWNER/NAME/resolve/REV/FILE...
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if len(parts) != 5 || parts[2] != "resolve" || parts[3] != "main" {
		http.NotFound(w, r)
		return
	}
	repo, name := parts[0]+"/"+parts[1], parts[4]
	if tok, ok := f.gated[repo]; ok && r.Header.Get("Authorization") != "Bearer "+tok {
		http.Error(w, "Access to model "+repo+" is restricted.", http.StatusUnauthorized)
		return
	}
	files, ok := f.repos[repo]
	data, ok2 := files[name]
	if !ok || !ok2 {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.NotFound(w, r)
		return
	}
	w.Header().Set("X-Repo-Commit", "c0ffee")
	w.Header().Set("ETag", `"`+fmt.Sprintf("%x", sha256.Sum256(append([]byte("blob "), data...)))[:40]+`"`)
	if f.lfs[name] {
		s := sum(data)
		f.mu.Lock()
		f.blobs[s] = data
		f.mu.Unlock()
		etag := s
		if f.badSHA != "" {
			etag = f.badSHA
		}
		w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(data)))
		http.Redirect(w, r, f.cdn.URL+"/blobs/"+s, http.StatusFound)
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

func (f *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.cdnAuth = append(f.cdnAuth, r.Header.Get("Authorization"))
	f.cdnRanges = append(f.cdnRanges, r.Header.Get("Range"))
	data, ok := f.blobs[strings.TrimPrefix(r.URL.Path, "/blobs/")]
	cut := f.truncate
	f.truncate = 0
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if cut > 0 {
		// Announce the whole file, send part of it and drop the
		// connection.
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:cut])
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	if f.ignoreRange {
		w.Write(data)
		return
	}
	http.ServeContent(w, r, "blob", time.Time{}, bytes.NewReader(data))
}

func (f *fakeHub) getenv(token string) func(string) string {
	return func(k string) string {
		switch k {
		case EndpointEnv:
			return f.hub.URL
		case TokenEnv:
			return token
		}
		return ""
	}
}

// tinyFiles reads the tiny model of package bert's testdata.
func tinyFiles(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("..", "bert", "testdata", "tiny", filepath.FromSlash(n)))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = data
	}
	return out
}

func allTiny(t *testing.T) map[string][]byte {
	files := tinyFiles(t, "config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json")
	files["modules.json"] = []byte(`[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`)
	return files
}

func checkInstalled(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", name, len(got), err, len(want))
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.part"))
	if len(matches) > 0 {
		t.Errorf("left over: %v", matches)
	}
}

func TestDownload(t *testing.T) {
	f := newFakeHub(t)
	files := allTiny(t)
	f.repos["sentence-transformers/tiny"] = files
	dir := filepath.Join(t.TempDir(), "tiny")
	var mu sync.Mutex
	last := map[string][2]int64{}
	res, err := Download(t.Context(), "sentence-transformers/tiny", dir, Options{
		Getenv: f.getenv("hf_secret"),
		Progress: func(file string, done, total int64) {
			mu.Lock()
			last[file] = [2]int64{done, total}
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, files)
	if res.Commit != "c0ffee" || res.Revision != "main" || len(res.Missing) != 0 {
		t.Errorf("result %+v", res)
	}
	if strings.Join(res.Verified, ",") != "model.safetensors" || len(res.Unverified) != 4 {
		t.Errorf("verified %v, unverified %v", res.Verified, res.Unverified)
	}
	w := int64(len(files["model.safetensors"]))
	if got := last["model.safetensors"]; got != [2]int64{w, w} {
		t.Errorf("last progress of the weights %v, want %d/%d", got, w, w)
	}
	for i, a := range f.hubAuth {
		if a != "Bearer hf_secret" {
			t.Errorf("hub request %d: Authorization %q", i, a)
		}
	}
	if len(f.cdnAuth) != 1 || f.cdnAuth[0] != "" {
		t.Errorf("CDN saw Authorization %q, want one request without it", f.cdnAuth)
	}
}

func TestDownloadOptionalAndFallback(t *testing.T) {
	f := newFakeHub(t)
	// No tokenizer.json, no modules.json, no pooling config.
	files := tinyFiles(t, "config.json", "vocab.txt", "model.safetensors")
	f.repos["acme/bare"] = files
	dir := t.TempDir()
	res, err := Download(t.Context(), "acme/bare", dir, Options{Getenv: f.getenv("")})
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, files)
	if strings.Join(res.Missing, ",") != "modules.json,1_Pooling/config.json" {
		t.Errorf("missing %v", res.Missing)
	}
	pool, err := os.ReadFile(filepath.Join(dir, "1_Pooling", "config.json"))
	if err != nil || !strings.Contains(string(pool), `"word_embedding_dimension": 32`) || !strings.Contains(string(pool), `"pooling_mode_mean_tokens": true`) {
		t.Errorf("written pooling config %s, %v", pool, err)
	}
	for _, a := range f.hubAuth {
		if a != "" {
			t.Errorf("Authorization %q sent without HF_TOKEN", a)
		}
	}
	// A missing required file fails.
	delete(files, "config.json")
	_, err = Download(t.Context(), "acme/bare", t.TempDir(), Options{Getenv: f.getenv("")})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "acme/bare/config.json") {
		t.Errorf("missing config.json: %v", err)
	}
}

func TestDownloadResume(t *testing.T) {
	f := newFakeHub(t)
	files := allTiny(t)
	f.repos["sentence-transformers/tiny"] = files
	dir := t.TempDir()
	f.truncate = 40000
	_, err := Download(t.Context(), "sentence-transformers/tiny", dir, Options{Getenv: f.getenv("")})
	if err == nil || !strings.Contains(err.Error(), "run again to resume") {
		t.Fatalf("truncated download: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		t.Error("a failed download installed config.json")
	}
	if fi, err := os.Stat(filepath.Join(dir, "model.safetensors.part")); err != nil || fi.Size() != 40000 {
		t.Fatalf("partial file: %v %v", fi, err)
	}
	if _, err := Download(t.Context(), "sentence-transformers/tiny", dir, Options{Getenv: f.getenv("")}); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, files)
	if len(f.cdnRanges) != 2 || f.cdnRanges[0] != "" || f.cdnRanges[1] != "bytes=40000-" {
		t.Errorf("CDN ranges %q", f.cdnRanges)
	}
}

// TestDownloadRestart covers the cases where a .part cannot be resumed:
// the server ignores the range, or the .part belongs to other content.
func TestDownloadRestart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ignoreRange bool
		whole       bool // the .part holds the whole file: 416
		wantRanges  []string
	}{
		{"range ignored", true, false, []string{"bytes=100-"}},
		{"stale part", false, false, []string{"bytes=100-", ""}},
		{"whole part", false, true, []string{"bytes=%d-", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHub(t)
			files := allTiny(t)
			f.repos["sentence-transformers/tiny"] = files
			f.ignoreRange = tc.ignoreRange
			dir := t.TempDir()
			part := bytes.Repeat([]byte{7}, 100)
			if tc.whole {
				part = files["model.safetensors"]
				tc.wantRanges[0] = fmt.Sprintf(tc.wantRanges[0], len(part))
			}
			if err := os.WriteFile(filepath.Join(dir, "model.safetensors.part"), part, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := Download(t.Context(), "sentence-transformers/tiny", dir, Options{Getenv: f.getenv("")})
			if err != nil {
				t.Fatal(err)
			}
			checkInstalled(t, dir, files)
			if strings.Join(res.Verified, ",") != "model.safetensors" || strings.Join(f.cdnRanges, ",") != strings.Join(tc.wantRanges, ",") {
				t.Errorf("verified %v, CDN ranges %q", res.Verified, f.cdnRanges)
			}
		})
	}
}

func TestDownloadChecksum(t *testing.T) {
	f := newFakeHub(t)
	f.repos["sentence-transformers/tiny"] = allTiny(t)
	f.badSHA = strings.Repeat("ab", 32)
	dir := t.TempDir()
	_, err := Download(t.Context(), "sentence-transformers/tiny", dir, Options{Getenv: f.getenv("")})
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), f.badSHA) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	for _, name := range []string{"config.json", "tokenizer.json", "model.safetensors", "model.safetensors.part"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s exists after a checksum failure", name)
		}
	}
}

func TestDownloadGated(t *testing.T) {
	f := newFakeHub(t)
	f.repos["acme/gated"] = allTiny(t)
	f.gated["acme/gated"] = "good"
	_, err := Download(t.Context(), "acme/gated", t.TempDir(), Options{Getenv: f.getenv("bad")})
	if !errors.Is(err, ErrGated) || !strings.Contains(err.Error(), "HF_TOKEN") || !strings.Contains(err.Error(), "gated") {
		t.Errorf("err = %v", err)
	}
	if _, err := Download(t.Context(), "acme/gated", t.TempDir(), Options{Getenv: f.getenv("good")}); err != nil {
		t.Errorf("with the token: %v", err)
	}
}

func TestDownloadOffline(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close()
	dir := filepath.Join(t.TempDir(), "all-MiniLM-L6-v2")
	_, err := Download(t.Context(), "sentence-transformers/all-MiniLM-L6-v2", dir, Options{
		Getenv: func(k string) string {
			if k == EndpointEnv {
				return endpoint
			}
			return ""
		},
	})
	var off *OfflineError
	if !errors.As(err, &off) {
		t.Fatalf("err = %v, want *OfflineError", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a failed download left an empty model folder")
	}
	for _, want := range []string{"cannot reach " + endpoint, dir, "config.json", "tokenizer.json (or vocab.txt)", "model.safetensors", "1_Pooling/config.json",
		endpoint + "/sentence-transformers/all-MiniLM-L6-v2/resolve/main/", "ctxkit model pull all-MiniLM-L6-v2 --from FOLDER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

func TestRepoID(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", ""},
		{"BAAI/bge-small-en-v1.5", "BAAI/bge-small-en-v1.5", ""},
		{"a/b/c", "", "want NAME or OWNER/NAME"},
		{"../x", "", "not a valid repo name"},
		{"x/..", "", "not a valid repo name"},
		{"", "", "not a valid repo name"},
	} {
		got, err := RepoID(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("RepoID(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestInstallFromAndList(t *testing.T) {
	models := t.TempDir()
	src := filepath.Join("..", "bert", "testdata", "tiny")
	res, err := InstallFrom(src, filepath.Join(models, "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Files["tokenizer.json"] == 0 || strings.Join(res.Missing, ",") != "modules.json" {
		t.Errorf("result %+v", res)
	}
	checkInstalled(t, filepath.Join(models, "tiny"), tinyFiles(t, "config.json", "tokenizer.json", "model.safetensors", "1_Pooling/config.json"))

	empty := t.TempDir()
	if _, err := InstallFrom(empty, filepath.Join(models, "x")); err == nil || !strings.Contains(err.Error(), "missing config.json, tokenizer.json (or vocab.txt), model.safetensors") {
		t.Errorf("empty folder: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(models, "half"), 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := List(models)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "half" || list[0].Complete || list[1].Name != "tiny" || !list[1].Complete || list[1].Dimension != 32 || list[1].Size < 100000 {
		t.Errorf("list %+v", list)
	}
}
