package vault

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ctxkit/ctxkit/internal/atomicfile"
	"github.com/ctxkit/ctxkit/internal/chunk"
	"github.com/ctxkit/ctxkit/internal/extract"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/index"
	"github.com/ctxkit/ctxkit/vault/index/sqliteindex"
)

// indexFile and pinFile live in the vault's data folder: the search index,
// and the embedder it was built with.
const (
	indexFile = "index.db"
	pinFile   = "embedding.json"
	// metaFile keeps the metadata of written documents outside the index,
	// so that it survives a rebuilt index.
	metaFile = "documents.json"
)

// DefaultFileTimeout bounds the extraction of one file: a file that makes a
// parser loop is reported and skipped rather than stopping the run.
const DefaultFileTimeout = time.Minute

// IndexOptions tune (*Vault).Index.
type IndexOptions struct {
	// Agent runs the index, for the audit log; "" is the Owner.
	Agent string
	// Path limits the run to one file or folder, relative to the vault.
	Path string
	// Reindex drops the index first, to rebuild it whole (after a change
	// of embedding model).
	Reindex bool
	// Force processes the files again even when they have not changed.
	Force bool
	// Embedder overrides the one named by the vault's EmbeddingModel
	// (tests, benchmarks).
	Embedder embed.Embedder
	// Progress, when set, is told of each file as it is done.
	Progress func(done, total int, path string)
	// FileTimeout bounds one file's extraction; 0 is DefaultFileTimeout.
	FileTimeout time.Duration
}

// IndexReport says what an index run did.
type IndexReport struct {
	Indexed   int         `json:"indexed"`
	Unchanged int         `json:"unchanged"`
	Removed   int         `json:"removed"`
	Chunks    int         `json:"chunks"`
	Failed    []FileError `json:"failed"`
	// Embedder is the spec the vectors were made with; "none" when the
	// vault is searched lexically only.
	Embedder string `json:"embedder"`
}

// FileError is a file an index run could not index, and why.
type FileError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// pin records the embedder an index was built with, so that it is never
// queried or extended with vectors of another model.
type pin struct {
	Model string `json:"model"`
	Dim   int    `json:"dim"`
}

// embedder returns the embedder to use and checks it against the pin; nil
// means lexical only.
func (v *Vault) embedder(override embed.Embedder) (embed.Embedder, error) {
	if override != nil {
		return override, nil
	}
	spec := v.EmbeddingModel
	if spec == "" {
		spec = embed.None
	}
	var e embed.Embedder
	var err error
	if v.pool != nil {
		e, err = v.pool.embedder(spec, v.models)
	} else {
		e, err = embed.New(spec, embed.Options{ModelsDir: v.models})
	}
	switch {
	case errors.Is(err, embed.ErrNone), errors.Is(err, embed.ErrUnavailable):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	return e, nil
}

func (v *Vault) readPin() (*pin, error) {
	b, err := os.ReadFile(filepath.Join(v.DataDir(), pinFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p pin
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("read %s: %w", pinFile, err)
	}
	return &p, nil
}

// checkPin refuses an embedder other than the one the index was built with.
func (v *Vault) checkPin(p *pin, e embed.Embedder) error {
	spec := embed.None
	if e != nil {
		spec = e.Spec()
	}
	if p != nil && p.Model != spec {
		return fmt.Errorf("%w: vault %q was indexed with %s, not %s; re-embed it with: ctxkit vault reindex %s --embedding-model %s",
			ErrInvalid, v.Name, p.Model, spec, v.Name, spec)
	}
	return nil
}

func (v *Vault) openIndex(ctx context.Context) (index.Index, error) {
	if err := os.MkdirAll(v.DataDir(), 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(v.DataDir(), indexFile)
	if v.pool != nil {
		return v.pool.index(ctx, path)
	}
	return sqliteindex.Open(ctx, path)
}

// Index brings the vault's search index in step with its files: new and
// changed files (by content hash) are extracted, chunked, embedded and
// stored; files gone from the folder leave the index. A file that fails is
// reported in the report and does not stop the run. Each file is replaced
// in the index in one step, so a run that is killed leaves a consistent
// index, which the next run completes.
func (v *Vault) Index(ctx context.Context, opts IndexOptions) (*IndexReport, error) {
	if err := v.Require(Semantic); err != nil {
		return nil, err
	}
	scope, err := v.Resolve(opts.Path)
	if err != nil {
		return nil, err
	}
	if opts.Reindex {
		if v.pool != nil {
			if err := v.pool.drop(v.Dir); err != nil {
				return nil, fmt.Errorf("close the index: %w", err)
			}
		}
		for _, f := range []string{indexFile, indexFile + "-wal", indexFile + "-shm", pinFile} {
			if err := os.Remove(filepath.Join(v.DataDir(), f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("drop the index: %w", err)
			}
		}
	}
	e, err := v.embedder(opts.Embedder)
	if err != nil {
		return nil, err
	}
	p, err := v.readPin()
	if err != nil {
		return nil, err
	}
	if err := v.checkPin(p, e); err != nil {
		return nil, err
	}
	idx, err := v.openIndex(ctx)
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	if p == nil && e == nil {
		// Pinned too: vectors added later would cover only changed files.
		p = &pin{Model: embed.None}
		if err := v.writePin(*p); err != nil {
			return nil, err
		}
	}

	files, err := v.documents(scope)
	if err != nil {
		return nil, err
	}
	rep := &IndexReport{Embedder: embed.None, Failed: []FileError{}}
	if e != nil {
		rep.Embedder = e.Spec()
	}
	timeout := opts.FileTimeout
	if timeout <= 0 {
		timeout = DefaultFileTimeout
	}
	metas, err := v.readMeta()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, rel := range files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		seen[rel] = true
		changed, chunks, err := v.indexFile(ctx, idx, e, &p, rel, timeout, metas[rel], opts.Force)
		switch {
		case err != nil:
			rep.Failed = append(rep.Failed, FileError{Path: rel, Error: err.Error()})
		case changed:
			rep.Indexed++
			rep.Chunks += chunks
		default:
			rep.Unchanged++
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(files), rel)
		}
	}
	docs, err := idx.Docs(ctx)
	if err != nil {
		return rep, err
	}
	prefix := filepath.ToSlash(strings.TrimPrefix(scope, v.Dir))
	prefix = strings.TrimPrefix(prefix, "/")
	for _, d := range docs {
		inScope := prefix == "" || d.Path == prefix || strings.HasPrefix(d.Path, prefix+"/")
		if !inScope || seen[d.Path] {
			continue
		}
		// A file written since the listing (an agent's Write) is not gone:
		// only a file missing now leaves the index.
		if _, err := os.Lstat(filepath.Join(v.Dir, filepath.FromSlash(d.Path))); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := idx.Delete(ctx, d.Path); err != nil {
			return rep, err
		}
		rep.Removed++
	}
	agent := opts.Agent
	if agent == "" {
		agent = Owner
	}
	_ = v.Log(ctx, Event{Agent: agent, Action: "index", Path: opts.Path, Outcome: OK,
		Detail: fmt.Sprintf("indexed=%d unchanged=%d removed=%d failed=%d", rep.Indexed, rep.Unchanged, rep.Removed, len(rep.Failed))})
	return rep, nil
}

// documents lists the vault's indexable files under scope, as
// slash-separated paths relative to the vault, skipping the data folder,
// hidden folders and anything a symlink would take out of the vault.
func (v *Vault) documents(scope string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(scope, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != scope && (name == DataDirName || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !extract.Supported(path) {
			return nil
		}
		rel, err := filepath.Rel(v.Dir, path)
		if err != nil {
			return err
		}
		if _, err := v.Resolve(rel); err != nil {
			return nil // a symlink leading out of the vault
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the files of vault %q: %w", v.Name, err)
	}
	return out, nil
}

// indexFile indexes one file if its content changed; it reports whether it
// did and how many chunks it stored.
// Callers have resolved rel inside the vault (documents, Write).
func (v *Vault) indexFile(ctx context.Context, idx index.Index, e embed.Embedder, p **pin, rel string, timeout time.Duration, meta map[string]string, force bool) (bool, int, error) {
	data, err := os.ReadFile(filepath.Join(v.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return false, 0, err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	old, err := idx.Doc(ctx, rel)
	if err == nil && old.Hash == hash && maps.Equal(old.Meta, meta) && !force {
		return false, 0, nil
	}
	doc, err := extractWithin(ctx, rel, data, timeout)
	if err != nil {
		return false, 0, err
	}
	pieces := chunk.Split(doc, chunk.Options{})
	chunks := make([]index.Chunk, len(pieces))
	texts := make([]string, len(pieces))
	for i, c := range pieces {
		chunks[i] = index.Chunk{Text: c.Text, Heading: c.HeadingPath, Page: c.Page}
		texts[i] = c.Text
	}
	if e != nil && len(texts) > 0 {
		vectors, err := e.Embed(ctx, texts)
		if err != nil {
			return false, 0, err
		}
		for i := range chunks {
			chunks[i].Vector = vectors[i]
		}
		if *p == nil {
			*p = &pin{Model: e.Spec(), Dim: len(vectors[0])}
			if err := v.writePin(**p); err != nil {
				return false, 0, err
			}
		} else if len(vectors[0]) != (*p).Dim {
			return false, 0, fmt.Errorf("%s returned vectors of %d dimensions; the index holds %d", e.Spec(), len(vectors[0]), (*p).Dim)
		}
	}
	// Metadata given when the file was written survives reindexing.
	d := index.Doc{Path: rel, Hash: hash, Meta: meta}
	if err := idx.Put(ctx, d, chunks); err != nil {
		return false, 0, err
	}
	return true, len(chunks), nil
}

// readMeta returns the metadata of written documents, by path.
func (v *Vault) readMeta() (map[string]map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(v.DataDir(), metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", metaFile, err)
	}
	return m, nil
}

// editMeta changes the documents' metadata under a lock, so that
// concurrent writers lose nothing.
func (v *Vault) editMeta(ctx context.Context, fn func(map[string]map[string]string)) error {
	path := filepath.Join(v.DataDir(), metaFile)
	unlock, err := atomicfile.Lock(ctx, path+".lock", 0o700, 10*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := v.readMeta()
	if err != nil {
		return err
	}
	fn(m)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o600, 0o700, nil)
}

func (v *Vault) writePin(p pin) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(v.DataDir(), pinFile), b, 0o600, 0o700, nil)
}

// extractWithin extracts a file, giving up after timeout: a parser stuck on
// a hostile file is abandoned (its goroutine ends with it, if ever) and the
// file reported.
func extractWithin(ctx context.Context, rel string, data []byte, timeout time.Duration) (*extract.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		doc *extract.Document
		err error
	}
	done := make(chan result, 1)
	go func() {
		doc, err := extract.ExtractBytes(ctx, rel, data)
		done <- result{doc, err}
	}()
	select {
	case r := <-done:
		return r.doc, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("extract %s: gave up after %s", rel, timeout)
	}
}

// Result is one passage found by Query.
type Result struct {
	Path    string  `json:"path"`
	Heading string  `json:"heading,omitempty"`
	Page    int     `json:"page,omitempty"`
	Chunk   int     `json:"chunk"`
	Text    string  `json:"text"`
	Score   float64 `json:"score"`
	// The rank and score of each signal; 0 when it did not find the
	// passage.
	LexicalRank  int     `json:"lexical_rank,omitempty"`
	LexicalScore float64 `json:"lexical_score,omitempty"`
	VectorRank   int     `json:"vector_rank,omitempty"`
	VectorScore  float64 `json:"vector_score,omitempty"`
}

// QueryResult is what Query found.
type QueryResult struct {
	Results []Result `json:"results"`
	// Mode is "hybrid" (BM25 and vectors, fused by reciprocal rank) or
	// "lexical" (no embedder).
	Mode string `json:"mode"`
}

// Query searches the vault: BM25 and, with an embedder, vector similarity,
// fused by reciprocal rank. No match is an empty list, not an error. It
// opens a Searcher for this one query, without loading the lexicon (FTS5
// ranks one query faster than the lexicon loads, and ranks the same);
// through a registry with a Pool (a server), it asks the vault's pooled
// Searcher, reloaded whenever the index has changed.
func (v *Vault) Query(ctx context.Context, text string, n int, override embed.Embedder) (*QueryResult, error) {
	if v.pool != nil && override == nil {
		if err := v.Require(Semantic); err != nil {
			return nil, err
		}
		s, err := v.pool.searcher(ctx, v)
		if err != nil {
			return nil, err
		}
		return s.Query(ctx, text, n)
	}
	s, err := v.searcher(ctx, override, false)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Query(ctx, text, n)
}

// Searcher answers queries on one vault with its index open, and its
// vectors and lexicon in memory, loaded once: at 100k chunks of 384
// dimensions, 150 MB of vectors and about a second. The lexicon
// (index.Lexicon) finds and scores exactly as the index's BM25 (SQLite
// FTS5) does, in about a millisecond rather than tens; Vault.Query, which
// answers one query, asks the index instead, with the same results. A
// Searcher sees the index as it was when opened; open a new one after
// indexing.
type Searcher struct {
	idx     index.Index
	e       embed.Embedder
	vectors *index.Vectors // nil: lexical only
	lexicon *index.Lexicon // nil: the index ranks
}

// Searcher opens the vault's index for queries, with its embedder (or
// override) checked against the pinned one.
func (v *Vault) Searcher(ctx context.Context, override embed.Embedder) (*Searcher, error) {
	return v.searcher(ctx, override, true)
}

func (v *Vault) searcher(ctx context.Context, override embed.Embedder, withLexicon bool) (*Searcher, error) {
	if err := v.Require(Semantic); err != nil {
		return nil, err
	}
	e, err := v.embedder(override)
	if err != nil {
		return nil, err
	}
	p, err := v.readPin()
	if err != nil {
		return nil, err
	}
	if p != nil || e == nil {
		if err := v.checkPin(p, e); err != nil {
			return nil, err
		}
	}
	idx, err := v.openIndex(ctx)
	if err != nil {
		return nil, err
	}
	s := &Searcher{idx: idx}
	// The vectors and the lexicon load side by side.
	var wg sync.WaitGroup
	var vecErr, lexErr error
	if e != nil && p != nil {
		s.e = e
		wg.Go(func() { s.vectors, vecErr = index.LoadVectors(ctx, idx) })
	}
	if withLexicon {
		wg.Go(func() { s.lexicon, lexErr = index.LoadLexicon(ctx, idx) })
	}
	wg.Wait()
	if errors.Is(lexErr, index.ErrInvalidUTF8) {
		s.lexicon, lexErr = nil, nil // the index ranks, as the lexicon could not exactly
	}
	if err := errors.Join(vecErr, lexErr); err != nil {
		idx.Close()
		return nil, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	return s, nil
}

// Close releases the index.
func (s *Searcher) Close() error { return s.idx.Close() }

// lexical ranks by BM25 in the lexicon, or in the index without one.
func (s *Searcher) lexical(ctx context.Context, text string, n int) ([]index.Hit, error) {
	if s.lexicon != nil {
		return s.lexicon.Search(text, n), nil
	}
	return s.idx.Lexical(ctx, text, n)
}

// Query is Vault.Query on the open index; it is safe for concurrent use.
// A chunk found in memory but removed from the index since the Searcher
// was opened is left out.
func (s *Searcher) Query(ctx context.Context, text string, n int) (*QueryResult, error) {
	if n <= 0 {
		n = 5
	}
	wide := max(4*n, 20) // each signal looks deeper than n, so fusion has room
	lexical, err := s.lexical(ctx, text, wide)
	if err != nil {
		return nil, err
	}
	res := &QueryResult{Mode: "lexical", Results: []Result{}}
	var vector []index.Hit
	if s.vectors != nil {
		res.Mode = "hybrid"
		q, err := s.e.Embed(ctx, []string{text})
		if err != nil {
			return nil, err
		}
		if vector, err = s.vectors.Search(q[0], wide); err != nil {
			return nil, err
		}
	}
	byID := map[int64]index.Chunk{}
	for _, h := range lexical {
		if h.Doc != "" { // the index's hits carry the chunk, the lexicon's only its id
			byID[h.ID] = h.Chunk
		}
	}
	for _, f := range index.Fuse(lexical, vector, n) {
		c, ok := byID[f.ID]
		if !ok {
			if c, err = s.idx.Chunk(ctx, f.ID); errors.Is(err, index.ErrNotFound) {
				continue
			} else if err != nil {
				return nil, err
			}
		}
		res.Results = append(res.Results, Result{
			Path: c.Doc, Heading: c.Heading, Page: c.Page, Chunk: c.Index, Text: c.Text, Score: f.Score,
			LexicalRank: f.LexicalRank, LexicalScore: f.LexicalScore, VectorRank: f.VectorRank, VectorScore: f.VectorScore,
		})
	}
	return res, nil
}

// Docs lists the vault's indexed documents.
func (v *Vault) Docs(ctx context.Context) ([]index.Doc, error) {
	if err := v.Require(Semantic); err != nil {
		return nil, err
	}
	idx, err := v.openIndex(ctx)
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	return idx.Docs(ctx)
}

// WriteOptions describe a document written into a semantic vault.
type WriteOptions struct {
	// Agent writes (Owner for the CLI); its access is checked.
	Agent string
	// Path is where, inside the vault; its extension picks the format.
	Path    string
	Content []byte
	// Overwrite allows replacing an existing file.
	Overwrite bool
	// Meta is kept with the document in the index, across reindexing.
	Meta map[string]string
	// Embedder overrides the vault's (tests).
	Embedder embed.Embedder
}

// Write stores a document written by an agent or a script and indexes it
// at once; the file is replaced atomically. An existing file is refused
// (ErrExists) unless Overwrite is set.
func (v *Vault) Write(ctx context.Context, o WriteOptions) error {
	if err := v.Authorize(ctx, o.Agent, Write, "write", o.Path); err != nil {
		return err
	}
	if err := v.Require(Semantic); err != nil {
		return err
	}
	abs, err := v.Resolve(o.Path)
	if err != nil {
		return err
	}
	if !extract.Supported(abs) {
		return fmt.Errorf("%w: %q is not a document type the vault indexes (.md .txt .pdf .docx .html .json .csv)", ErrInvalid, o.Path)
	}
	if fi, err := os.Stat(abs); err == nil {
		if fi.IsDir() || !o.Overwrite {
			return fmt.Errorf("%w: %s in vault %q (overwrite to replace it)", ErrExists, o.Path, v.Name)
		}
	}
	if err := atomicfile.WriteFile(abs, o.Content, 0o644, 0o755, nil); err != nil {
		return fmt.Errorf("write %s: %w", o.Path, err)
	}
	rel, err := filepath.Rel(v.Dir, abs)
	if err != nil {
		return err
	}
	rel = filepath.ToSlash(rel)
	e, err := v.embedder(o.Embedder)
	if err != nil {
		return err
	}
	p, err := v.readPin()
	if err != nil {
		return err
	}
	if err := v.checkPin(p, e); err != nil {
		return err
	}
	idx, err := v.openIndex(ctx)
	if err != nil {
		return err
	}
	defer idx.Close()
	meta := map[string]string{}
	for k, val := range o.Meta {
		meta[k] = val
	}
	meta["written_by"] = o.Agent
	meta["written_at"] = time.Now().UTC().Format(TimeFormat)
	if err := v.editMeta(ctx, func(m map[string]map[string]string) { m[rel] = meta }); err != nil {
		return fmt.Errorf("record the metadata of %s: %w", rel, err)
	}
	if _, _, err := v.indexFile(ctx, idx, e, &p, rel, DefaultFileTimeout, meta, true); err != nil {
		return fmt.Errorf("index %s: %w", rel, err)
	}
	return v.Log(ctx, Event{Agent: o.Agent, Action: "write", Path: rel, Outcome: OK})
}

// Delete removes a document, or every document under a folder, from the
// vault and its index, and returns the paths removed.
func (v *Vault) Delete(ctx context.Context, agent, path string) ([]string, error) {
	if err := v.Authorize(ctx, agent, Write, "delete", path); err != nil {
		return nil, err
	}
	if err := v.Require(Semantic); err != nil {
		return nil, err
	}
	abs, err := v.Resolve(path)
	if err != nil {
		return nil, err
	}
	if abs == v.Dir {
		return nil, fmt.Errorf("%w: name a file or folder of vault %q to delete", ErrInvalid, v.Name)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("%s in vault %q: %w", path, v.Name, fs.ErrNotExist)
	}
	files, err := v.documents(abs)
	if err != nil {
		return nil, err
	}
	idx, err := v.openIndex(ctx)
	if err != nil {
		return nil, err
	}
	defer idx.Close()
	deleted := []string{}
	for _, rel := range files {
		if err := os.Remove(filepath.Join(v.Dir, filepath.FromSlash(rel))); err != nil {
			return deleted, fmt.Errorf("delete %s: %w", rel, err)
		}
		if err := idx.Delete(ctx, rel); err != nil {
			return deleted, err
		}
		deleted = append(deleted, rel)
		if err := v.Log(ctx, Event{Agent: agent, Action: "delete", Path: rel, Outcome: OK}); err != nil {
			return deleted, err
		}
	}
	err = v.editMeta(ctx, func(m map[string]map[string]string) {
		for _, rel := range deleted {
			delete(m, rel)
		}
	})
	return deleted, err
}
