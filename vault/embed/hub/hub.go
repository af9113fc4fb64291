// Package hub installs embedding models from the Hugging Face Hub into a
// directory laid out as package bert reads it: config.json, tokenizer.json
// (vocab.txt as fallback), model.safetensors, and the optional
// modules.json and 1_Pooling/config.json.
//
// Each file is fetched with GET {endpoint}/{repo}/resolve/{revision}/{file},
// the endpoint being $HF_ENDPOINT (a mirror) or https://huggingface.co, with
// "Authorization: Bearer $HF_TOKEN" when the token is set. The Hub answers
// with X-Repo-Commit and, for files kept in Git LFS (the weights), with
// X-Linked-Etag, the quoted sha256 of the content, before redirecting to
// its CDN. The download checks each LFS file against that X-Linked-Etag,
// read from the Hub's own response (the redirect), so that no second
// request to the tree API is needed and a mirror that serves the resolve
// route alone still verifies; a file without X-Linked-Etag is a plain Git
// file and is not checked (Result.Unverified lists them).
//
// A file is written to FILE.part, resumed with a Range request when a
// .part is left from an earlier attempt, and renamed into place only when
// every file of the model has been downloaded and checked: a failed pull
// installs nothing. The Authorization header is not sent on a redirect to
// another host (the CDN).
package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// DefaultEndpoint is the Hub's address when HF_ENDPOINT is unset.
const DefaultEndpoint = "https://huggingface.co"

// DefaultOrg owns the repos of short model names.
const DefaultOrg = "sentence-transformers"

// Environment variables read through Options.Getenv.
const (
	EndpointEnv = "HF_ENDPOINT"
	TokenEnv    = "HF_TOKEN"
)

// File is one file of a model repo.
type File struct {
	// Name is the path in the repo and in the model directory.
	Name string
	// Optional files may be missing (404).
	Optional bool
	// Fallback is fetched when Name is missing (404).
	Fallback string
}

// Files are the files of a model, in download order.
var Files = []File{
	{Name: "config.json"},
	{Name: "tokenizer.json", Fallback: "vocab.txt"},
	{Name: "modules.json", Optional: true},
	{Name: "1_Pooling/config.json", Optional: true},
	{Name: "model.safetensors"},
}

// RequiredListing names the files a model directory needs, for messages.
const RequiredListing = "config.json, tokenizer.json (or vocab.txt), model.safetensors and 1_Pooling/config.json"

// PoolingFile is the pooling config; when the repo has none, Download
// writes a mean-pooling one, the default package bert assumes.
const PoolingFile = "1_Pooling/config.json"

// ErrGated is returned for a repo that answers 401 or 403: gated, private,
// or a wrong token.
var ErrGated = errors.New("access denied by the Hub")

// ErrNotFound is returned when a required file, the repo or the revision
// does not exist.
var ErrNotFound = errors.New("not found on the Hub")

// ErrChecksum is returned when a file's sha256 differs from the Hub's.
var ErrChecksum = errors.New("sha256 mismatch")

// Options configure Download.
type Options struct {
	// Revision is a branch, tag or commit; "" means main.
	Revision string
	// HTTPClient sends the requests; nil means a client without timeout
	// (requests follow their context).
	HTTPClient *http.Client
	// Getenv reads HF_ENDPOINT and HF_TOKEN; nil means os.Getenv.
	Getenv func(string) string
	// Progress, when set, is called as a file's bytes arrive, with the
	// bytes done and the total (-1 when unknown); the last call of a
	// file has done == total.
	Progress func(file string, done, total int64)
}

// Result reports a download.
type Result struct {
	Repo     string
	Revision string
	// Commit is the X-Repo-Commit the Hub answered with.
	Commit string
	// Files are the installed files, with their sizes.
	Files map[string]int64
	// Verified lists the files checked against their sha256.
	Verified []string
	// Unverified lists the files that had no sha256 from the Hub.
	Unverified []string
	// Missing lists optional files the repo does not have.
	Missing []string
}

var repoPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// RepoID maps a model name to a repo id: a short name such as
// all-MiniLM-L6-v2 is sentence-transformers/all-MiniLM-L6-v2, and a full
// "owner/name" is kept.
func RepoID(name string) (string, error) {
	parts := strings.Split(name, "/")
	if len(parts) == 1 {
		parts = []string{DefaultOrg, name}
	}
	if len(parts) != 2 {
		return "", fmt.Errorf("model %q: want NAME or OWNER/NAME", name)
	}
	for _, p := range parts {
		if !repoPart.MatchString(p) || strings.Contains(p, "..") {
			return "", fmt.Errorf("model %q: %q is not a valid repo name", name, p)
		}
	}
	return parts[0] + "/" + parts[1], nil
}

// LocalName is the directory name of a model: the repo id's last part.
func LocalName(name string) string {
	return name[strings.LastIndex(name, "/")+1:]
}

// URL returns the resolve address of a file.
func URL(endpoint, repo, revision, file string) string {
	return strings.TrimRight(endpoint, "/") + "/" + repo + "/resolve/" + url.PathEscape(revision) + "/" + file
}

// OfflineError is returned when the Hub cannot be reached: it says which
// files to fetch from where and into which directory to put them.
type OfflineError struct {
	Endpoint, Repo, Revision, Dir string
	Err                           error
}

func (e *OfflineError) Error() string {
	base := URL(e.Endpoint, e.Repo, e.Revision, "")
	return fmt.Sprintf("cannot reach %s (%v). On a machine with access, download %s from %s (modules.json too when the repo has it) "+
		"and copy them into %s keeping 1_Pooling/ as a folder, or put them in a folder and run: ctxkit model pull %s --from FOLDER",
		e.Endpoint, e.Err, RequiredListing, base, e.Dir, LocalName(e.Repo))
}

func (e *OfflineError) Unwrap() error { return e.Err }

// Download fetches the model repo's files into dir (created if needed).
func Download(ctx context.Context, repo, dir string, opts Options) (_ *Result, err error) {
	if _, err := RepoID(repo); err != nil || !strings.Contains(repo, "/") {
		return nil, fmt.Errorf("download: repo %q: want OWNER/NAME", repo)
	}
	if opts.Revision == "" {
		opts.Revision = "main"
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	endpoint := opts.Getenv(EndpointEnv)
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
		// A failure leaves no empty folder that would look like a
		// broken model; .part files stay for the next attempt.
		defer func() {
			if err != nil {
				os.Remove(filepath.Join(dir, filepath.Dir(filepath.FromSlash(PoolingFile))))
				os.Remove(dir)
			}
		}()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("download %s: %w", repo, err)
	}
	d := &downloader{opts: opts, endpoint: endpoint, repo: repo, dir: dir}
	res := &Result{Repo: repo, Revision: opts.Revision, Files: map[string]int64{}}
	var parts []string // names whose .part is complete and checked
	for _, f := range Files {
		name := f.Name
		meta, err := d.fetch(ctx, name)
		if errors.Is(err, ErrNotFound) && f.Fallback != "" {
			name = f.Fallback
			meta, err = d.fetch(ctx, name)
		}
		if errors.Is(err, ErrNotFound) && f.Optional {
			res.Missing = append(res.Missing, f.Name)
			continue
		}
		if err != nil {
			return nil, err
		}
		if res.Commit == "" {
			res.Commit = meta.commit
		}
		if meta.verified {
			res.Verified = append(res.Verified, name)
		} else {
			res.Unverified = append(res.Unverified, name)
		}
		res.Files[name] = meta.size
		parts = append(parts, name)
	}
	for _, name := range parts {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.Rename(dst+".part", dst); err != nil {
			return nil, fmt.Errorf("download %s: install %s: %w", repo, name, err)
		}
	}
	if _, ok := res.Files[PoolingFile]; !ok {
		if err := WriteMeanPooling(dir); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// WriteMeanPooling writes a 1_Pooling/config.json asking for mean pooling,
// with the dimension read from config.json.
func WriteMeanPooling(dir string) error {
	dim, err := Dimension(dir)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("{\n  \"word_embedding_dimension\": %d,\n  \"pooling_mode_cls_token\": false,\n  \"pooling_mode_mean_tokens\": true\n}\n", dim)
	dst := filepath.Join(dir, filepath.FromSlash(PoolingFile))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("write pooling config: %w", err)
	}
	if err := writeAtomic(dst, []byte(body)); err != nil {
		return fmt.Errorf("write pooling config: %w", err)
	}
	return nil
}

// downloader fetches files of one repo.
type downloader struct {
	opts           Options
	endpoint, repo string
	dir            string
}

// fileMeta is what the Hub said of a file.
type fileMeta struct {
	commit   string
	size     int64
	verified bool
}

// safePath returns the local path of a repo file, refusing names that
// would leave dir.
func (d *downloader) safePath(name string) (string, error) {
	if !filepath.IsLocal(filepath.FromSlash(name)) || strings.Contains(name, `\`) {
		return "", fmt.Errorf("download %s: file %q leaves the model directory", d.repo, name)
	}
	return filepath.Join(d.dir, filepath.FromSlash(name)), nil
}

// fetch downloads one file to its .part, resuming a partial one, and
// checks its sha256 when the Hub gave one. It retries once from scratch
// when the server refuses the range or a resumed file fails its check.
func (d *downloader) fetch(ctx context.Context, name string) (fileMeta, error) {
	dst, err := d.safePath(name)
	if err != nil {
		return fileMeta{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fileMeta{}, fmt.Errorf("download %s: %w", name, err)
	}
	part := dst + ".part"
	meta, err := d.fetchPart(ctx, name, part)
	if errors.Is(err, errRestart) {
		if err := os.Remove(part); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fileMeta{}, fmt.Errorf("download %s: %w", name, err)
		}
		meta, err = d.fetchPart(ctx, name, part)
	}
	if errors.Is(err, errRestart) {
		err = fmt.Errorf("download %s/%s: the server refused the range request", d.repo, name)
	}
	return meta, err
}

// errRestart asks fetch to drop the .part and start again.
var errRestart = errors.New("restart")

func (d *downloader) fetchPart(ctx context.Context, name, part string) (_ fileMeta, err error) {
	var meta fileMeta
	label := d.repo + "/" + name
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return meta, fmt.Errorf("download %s: %w", label, err)
	}
	defer func() {
		// A failure before any byte leaves no empty .part behind.
		if fi, serr := f.Stat(); err != nil && serr == nil && fi.Size() == 0 {
			os.Remove(part)
		}
		f.Close()
	}()
	h := sha256.New()
	offset, err := io.Copy(h, f)
	if err != nil {
		return meta, fmt.Errorf("download %s: read %s: %w", label, part, err)
	}
	resumed := offset > 0

	u := URL(d.endpoint, d.repo, d.opts.Revision, name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return meta, fmt.Errorf("download %s: %w", label, err)
	}
	if tok := d.opts.Getenv(TokenEnv); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	// The Hub's metadata is on its own answer, which a redirect to the
	// CDN replaces: keep the first response's headers.
	var hubHeader http.Header
	client := *d.opts.HTTPClient
	next := client.CheckRedirect
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if hubHeader == nil && r.Response != nil {
			hubHeader = r.Response.Header
		}
		if r.URL.Host != via[0].URL.Host { // the token is for the Hub only
			r.Header.Del("Authorization")
		}
		if next != nil {
			return next(r, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return meta, fmt.Errorf("download %s: %w", label, ctx.Err())
		}
		if unreachable(err) {
			return meta, &OfflineError{Endpoint: d.endpoint, Repo: d.repo, Revision: d.opts.Revision, Dir: d.dir, Err: err}
		}
		return meta, fmt.Errorf("download %s: %w", label, err)
	}
	defer resp.Body.Close()
	if hubHeader == nil {
		hubHeader = resp.Header
	}
	meta.commit = hubHeader.Get("X-Repo-Commit")
	want := strings.ToLower(strings.Trim(strings.TrimPrefix(hubHeader.Get("X-Linked-Etag"), "W/"), `"`))

	switch resp.StatusCode {
	case http.StatusOK:
		if offset > 0 { // range ignored: the whole file follows
			if err := f.Truncate(0); err != nil {
				return meta, fmt.Errorf("download %s: %w", label, err)
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return meta, fmt.Errorf("download %s: %w", label, err)
			}
			h.Reset()
			offset = 0
		}
	case http.StatusPartialContent:
		start, _, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != offset {
			return meta, errRestart
		}
	case http.StatusRequestedRangeNotSatisfiable:
		return meta, errRestart
	case http.StatusUnauthorized, http.StatusForbidden:
		return meta, fmt.Errorf("download %s: %w (HTTP %d): the repo is gated or private, or the token is wrong; "+
			"accept its terms at %s/%s and set %s to a token that can read it", label, ErrGated, resp.StatusCode, d.endpoint, d.repo, TokenEnv)
	case http.StatusNotFound:
		return meta, fmt.Errorf("download %s at %s: %w", label, d.opts.Revision, ErrNotFound)
	default:
		return meta, fmt.Errorf("download %s: HTTP %s", label, resp.Status)
	}

	total := int64(-1)
	if _, t, ok := parseContentRange(resp.Header.Get("Content-Range")); ok && t >= 0 {
		total = t
	} else if resp.ContentLength >= 0 {
		total = offset + resp.ContentLength
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return meta, fmt.Errorf("download %s: %w", label, err)
	}
	w := &progressWriter{w: io.MultiWriter(f, h), done: offset, total: total, file: name, fn: d.opts.Progress}
	if w.fn != nil {
		w.fn(name, offset, total)
	}
	limit := maxFileBytes(name)
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit-offset+1))
	if err == nil && offset+n > limit {
		return meta, fmt.Errorf("download %s: over %d bytes, more than such a file can be; refusing it", label, limit)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return meta, fmt.Errorf("download %s: interrupted after %d bytes (run again to resume): %w", label, offset+n, err)
	}
	size := offset + n
	if total >= 0 && size != total {
		return meta, fmt.Errorf("download %s: got %d of %d bytes (run again to resume)", label, size, total)
	}
	if total < 0 && w.fn != nil { // the size is known now: report the end
		w.fn(name, size, size)
	}
	if err := f.Sync(); err != nil {
		return meta, fmt.Errorf("download %s: %w", label, err)
	}
	meta.size = size
	if want != "" && isSHA256(want) {
		got := hex.EncodeToString(h.Sum(nil))
		if got != want {
			if resumed { // perhaps a .part of another revision: start again
				return meta, errRestart
			}
			f.Close()
			os.Remove(part)
			return meta, fmt.Errorf("download %s: %w: got %s, the Hub says %s; the file was discarded", label, ErrChecksum, got, want)
		}
		meta.verified = true
	}
	return meta, nil
}

// progressWriter reports the bytes written.
type progressWriter struct {
	w           io.Writer
	done, total int64
	file        string
	fn          func(string, int64, int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.fn != nil && n > 0 {
		p.fn(p.file, p.done, p.total)
	}
	return n, err
}

// parseContentRange reads "bytes START-END/TOTAL" (TOTAL may be "*",
// given as -1).
func parseContentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// unreachable reports whether err means the network or the host cannot be
// reached (no route, refused, DNS failure, timeout).
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	var ue *url.Error
	switch {
	case errors.As(err, &dns), errors.As(err, &op):
		return true
	case errors.As(err, &ue) && ue.Timeout():
		return true
	}
	return false
}

// writeAtomic writes data to path through a temporary file and a rename.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".part"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// maxFileBytes bounds what a server may send for one file: a hostile
// mirror must not fill the disk with an endless config.json.
func maxFileBytes(name string) int64 {
	if name == "model.safetensors" {
		return 8 << 30
	}
	return 64 << 20
}
