package vault

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/ctxkit/ctxkit/internal/chunk"
	"github.com/ctxkit/ctxkit/internal/extract"
	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/episodic"
	"github.com/ctxkit/ctxkit/vault/index"
)

// DefaultFileTimeout bounds the extraction of one file: a file that makes a
// parser loop is reported and skipped rather than stopping the run.
const DefaultFileTimeout = time.Minute

// Query limits: passages per query.
const (
	DefaultQueryResults = 5
	MaxQueryResults     = 100
)

// IndexRequest asks for an index run of a semantic vault.
type IndexRequest struct {
	Path  string `json:"path,omitempty" jsonschema:"only this file or folder of the vault"`
	Force bool   `json:"force,omitempty" jsonschema:"process files again even when unchanged"`
	// Reindex rebuilds the index whole (after a change of embedding
	// model); with Path, it processes that path again instead.
	Reindex bool `json:"reindex,omitempty" jsonschema:"rebuild the whole index (or process path again)"`
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
	// Warning says what the run could not do as asked (a rebuild that a
	// later one replaced).
	Warning string `json:"warning,omitempty"`
}

// FileError is a file a run could not use, and why.
type FileError struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// embedder returns the embedder of a spec (nil for none). One that cannot
// run here (a builtin model not installed) is ErrUnavailable, saying what
// to do: nothing that needs it goes on without it.
func (s *Service) embedder(spec string) (embed.Embedder, error) {
	if spec == "" {
		spec = embed.None
	}
	s.embedMu.Lock()
	r, ok := s.embedders[spec]
	if !ok {
		r.e, r.err = s.newEmbedder(spec)
		if !errors.Is(r.err, embed.ErrUnavailable) { // the model may be installed meanwhile
			s.embedders[spec] = r
		}
	}
	s.embedMu.Unlock()
	switch {
	case errors.Is(r.err, embed.ErrNone):
		return nil, nil
	case errors.Is(r.err, embed.ErrUnavailable):
		s.log.Warn("embedder not available", "spec", spec, "err", r.err)
		return nil, &Error{Kind: ErrUnavailable, Field: "embedding_model",
			Msg: fmt.Sprintf("the embedder %s is not available here", spec), Fix: installFix(spec)}
	case r.err != nil:
		return nil, r.err
	}
	return r.e, nil
}

// installFix says how to make spec's embedder available: for a builtin
// model, the command that installs it.
func installFix(spec string) string {
	sp, err := embed.ParseSpec(spec)
	if err != nil || sp.Provider != embed.Builtin {
		return "check the embedder's configuration, then retry"
	}
	name := embed.PullName(sp.Model)
	return fmt.Sprintf("install the model: ctxkit model pull %s (on a machine without network: ctxkit model pull %s --from DIR)", name, name)
}

// vaultEmbedder is embedder for v's configured spec, an error naming the
// vault. A semantic vault can move to another embedder, and be searched
// lexically meanwhile when asked to; the fix says so.
func (s *Service) vaultEmbedder(v *Vault) (embed.Embedder, error) {
	e, err := s.embedder(v.EmbeddingModel)
	var ve *Error
	if errors.As(err, &ve) && ve.Kind == ErrUnavailable {
		out := *ve
		out.Field = "" // not an argument of the call that needed it
		out.Msg = fmt.Sprintf("vault %q is pinned to the embedder %s, which is not available here: the vault is not indexed or searched without it", v.Name, v.EmbeddingModel)
		if v.Type == Semantic {
			out.Fix += fmt.Sprintf("; or move the vault to another embedder: ctxkit vault reindex %s --embedding-model SPEC; "+
				"or search its words only, on purpose: ctxkit vault query %s --lexical (lexical: true)", v.Name, v.Name)
		}
		return nil, &out
	}
	if err != nil {
		return nil, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	return e, nil
}

// EmbedderState says whether a vault's embedder can run here.
type EmbedderState struct {
	Vault          string `json:"vault"`
	EmbeddingModel string `json:"embedding_model" jsonschema:"the vault's embedder; none: searched by words only"`
	Available      bool   `json:"available" jsonschema:"whether queries and writes can use it now"`
	Message        string `json:"message,omitempty" jsonschema:"why not"`
	Fix            string `json:"fix,omitempty" jsonschema:"what makes it available"`
}

// Embedders says, for every semantic and episodic vault c can use, whether
// its embedder can run here. Nothing is loaded: a builtin model is read on
// its first use, within the call that uses it.
func (s *Service) Embedders(ctx context.Context, c Caller) ([]EmbedderState, error) {
	vs, err := s.visible(ctx, c)
	out := []EmbedderState{}
	for _, v := range vs {
		if v.Type != Skill && !v.Shadowed {
			out = append(out, s.embedderState(v))
		}
	}
	return out, err
}

// Embedder says whether the embedder of one vault c can see can run here.
func (s *Service) Embedder(ctx context.Context, c Caller, name string) (EmbedderState, error) {
	v, err := s.open(ctx, c, name, Read, "describe", "")
	if err != nil {
		return EmbedderState{}, err
	}
	return s.embedderState(v), nil
}

func (s *Service) embedderState(v *Vault) EmbedderState {
	st := EmbedderState{Vault: v.Name, EmbeddingModel: cmp.Or(v.EmbeddingModel, embed.None), Available: true}
	if _, err := s.vaultEmbedder(v); err != nil {
		d := Describe(err)
		st.Available, st.Message, st.Fix = false, d.Message, d.Fix
	}
	return st
}

// embedding is a vault's embedder together with the pin of its stored
// vectors.
type embedding struct {
	e      embed.Embedder // nil: lexical only
	pin    store.Pin
	pinned bool
}

// vectors reports whether the vault's stored vectors come from an embedder.
func (em embedding) vectors() bool { return em.pinned && em.pin.Model != embed.None }

// embedding returns v's embedder and pin, held to two rules:
//   - Vectors are only ever made and compared with the embedder they were
//     made with: an embedder other than the pinned one is refused
//     (ErrInvalid, with the reindex that moves the vault to it), unless
//     anyPin: a rebuild makes every vector again.
//   - A configured embedder that is not available (a builtin model not
//     installed) is refused for reads and writes alike (ErrUnavailable,
//     with what to do): a vault is never searched or indexed without its
//     embedder unless the caller asks for lexical search (QueryRequest.Lexical).
func (s *Service) embedding(ctx context.Context, v *Vault, anyPin bool) (embedding, error) {
	e, err := s.vaultEmbedder(v)
	if err != nil {
		return embedding{}, err
	}
	p, pinned, err := s.reg.Pin(ctx, v.ID)
	if err != nil {
		return embedding{}, err
	}
	em := embedding{e: e, pin: p, pinned: pinned}
	if anyPin || !pinned {
		return em, nil
	}
	spec := embed.None
	if e != nil {
		spec = e.Spec()
	}
	if p.Model != spec {
		return em, &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("vault %q was indexed with %s, not %s", v.Name, p.Model, spec),
			Fix: fmt.Sprintf("re-embed it: ctxkit vault reindex %s --embedding-model %s", v.Name, spec)}
	}
	return em, nil
}

// indexer is what one index run or write needs: the vault's index, its
// embedder and its pin.
type indexer struct {
	s *Service
	v *Vault
	embedding
	files store.Files
	idx   index.Index
	build index.Builder // a rebuild's, which file fills instead of idx
}

// indexerFor opens v's index with its embedder checked against the pin
// (any pin, for a rebuild).
func (s *Service) indexerFor(ctx context.Context, v *Vault, rebuild bool) (*indexer, error) {
	em, err := s.embedding(ctx, v, rebuild)
	if err != nil {
		return nil, err
	}
	files, err := s.files(ctx, v)
	if err != nil {
		return nil, err
	}
	idx, err := s.b.Index(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	return &indexer{s: s, v: v, embedding: em, files: files, idx: idx}, nil
}

// Index brings a semantic vault's index in step with its files: new and
// changed files (by content hash) are extracted, chunked, embedded and
// stored; files gone from the vault leave the index. A file that fails is
// reported and does not stop the run. Each file is replaced in the index in
// one step, so a run that is killed leaves a consistent index, which the
// next run completes. progress, when set, is told of each file as it is
// done.
func (s *Service) Index(ctx context.Context, c Caller, name string, req IndexRequest, progress func(done, total int, path string)) (*IndexReport, error) {
	action := "index"
	if req.Reindex {
		action = "reindex"
	}
	v, err := s.open(ctx, c, name, Write, action, req.Path, Semantic)
	if err != nil {
		return nil, err
	}
	_, prefix, err := s.resolve(v, req.Path)
	if err != nil {
		return nil, err
	}
	// A rebuild is how a vault moves to its new embedder: the old pin does
	// not bind it. Rebuilds started at once supersede one another (the
	// index keeps the last; the others' reports say so).
	whole := req.Reindex && req.Path == ""
	x, err := s.indexerFor(ctx, v, whole)
	if err != nil {
		return nil, err
	}
	if whole {
		return x.rebuild(ctx, c, progress)
	}
	return x.run(ctx, c, prefix, req.Force || req.Reindex, action, progress)
}

// rebuild rebuilds the whole index with the vault's embedder, as a new
// generation: queries read the old one until the new one is whole, and
// writes meanwhile reach both. The pin follows the new generation.
func (x *indexer) rebuild(ctx context.Context, c Caller, progress func(int, int, string)) (*IndexReport, error) {
	b, err := x.idx.Rebuild(ctx)
	if err != nil {
		return nil, err
	}
	x.build, x.pin, x.pinned = b, store.Pin{}, false
	rep, _, err := x.walk(ctx, ".", true, progress)
	if err == nil {
		err = b.Commit(ctx)
	}
	if errors.Is(err, index.ErrSuperseded) {
		rep.Warning = strings.TrimPrefix(rep.Warning+"; a later rebuild of the vault replaced this one", "; ")
		return rep, nil
	}
	if err != nil {
		if aerr := b.Abort(context.WithoutCancel(ctx)); aerr != nil {
			x.s.log.Warn("abort an index rebuild", "vault", x.v.Name, "err", aerr)
		}
		return rep, err
	}
	var pin *store.Pin
	switch {
	case x.pinned:
		pin = &x.pin
	case x.e == nil:
		pin = &store.Pin{Model: embed.None}
	}
	if err := x.s.reg.SetPin(ctx, x.v.ID, pin); err != nil {
		return rep, fmt.Errorf("pin the embedder of vault %q: %w", x.v.Name, err)
	}
	x.s.auditRun(ctx, x.v, c, "reindex", "", rep)
	return rep, nil
}

// newReport returns an empty report of x's run.
func (x *indexer) newReport() *IndexReport {
	rep := &IndexReport{Embedder: embed.None, Failed: []FileError{}}
	if x.e != nil {
		rep.Embedder = x.e.Spec()
	}
	return rep
}

// run indexes the files under prefix (a file or folder as resolve names
// it, "." for the whole vault) and drops from the index those gone from
// it.
func (x *indexer) run(ctx context.Context, c Caller, prefix string, force bool, action string, progress func(int, int, string)) (*IndexReport, error) {
	if !x.pinned && x.e == nil {
		// Pinned too: vectors added later would cover only changed files.
		if err := x.setPin(ctx, store.Pin{Model: embed.None}); err != nil {
			return nil, err
		}
	}
	rep, seen, err := x.walk(ctx, prefix, force, progress)
	if err != nil {
		return rep, err
	}
	docs, err := x.idx.Docs(ctx)
	if err != nil {
		return rep, err
	}
	for _, d := range docs {
		inScope := prefix == "." || d.Path == prefix || strings.HasPrefix(d.Path, prefix+"/")
		if !inScope || seen[d.Path] {
			continue
		}
		// A file written since the listing (an agent's write) is not
		// gone: only a file missing now leaves the index.
		if _, name, err := x.s.resolve(x.v, d.Path); err == nil {
			if _, err := x.files.Stat(ctx, name); !errors.Is(err, store.ErrNotFound) {
				continue
			}
		}
		if err := x.idx.Delete(ctx, d.Path); err != nil {
			return rep, err
		}
		rep.Removed++
	}
	path := prefix
	if path == "." {
		path = ""
	}
	x.s.auditRun(ctx, x.v, c, action, path, rep)
	return rep, nil
}

// walk indexes the files under prefix and returns their names too. It
// stops at the first error that is not one file's.
func (x *indexer) walk(ctx context.Context, prefix string, force bool, progress func(int, int, string)) (*IndexReport, map[string]bool, error) {
	rep := x.newReport()
	files, failed, err := x.s.documents(ctx, x.v, x.files, prefix)
	if err != nil {
		return rep, nil, err
	}
	rep.Failed = append(rep.Failed, failed...)
	metas, err := x.s.reg.DocMeta(ctx, x.v.ID)
	if err != nil {
		return rep, nil, err
	}
	// What the index holds, read once: a file written meanwhile is
	// indexed again at worst.
	var indexed map[string]index.Doc
	if !force {
		docs, err := x.idx.Docs(ctx)
		if err != nil {
			return rep, nil, err
		}
		indexed = make(map[string]index.Doc, len(docs))
		for _, d := range docs {
			indexed[d.Path] = d
		}
	}
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, seen, err
		}
		rel := f
		seen[rel] = true
		old, ok := indexed[rel]
		changed, chunks, err := x.file(ctx, rel, nil, metas[rel], func(hash string) bool {
			return ok && old.Hash == hash && maps.Equal(old.Meta, metas[rel])
		})
		switch {
		case errors.Is(err, index.ErrSuperseded):
			return rep, seen, err
		case err != nil:
			rep.Failed = append(rep.Failed, FileError{Path: rel, Error: hidePaths(err)})
		case changed:
			rep.Indexed++
			rep.Chunks += chunks
		default:
			rep.Unchanged++
		}
		if progress != nil {
			progress(i+1, len(files), rel)
		}
	}
	return rep, seen, nil
}

// auditRun records an index run.
func (s *Service) auditRun(ctx context.Context, v *Vault, c Caller, action, path string, rep *IndexReport) {
	s.audit(ctx, v, c, action, path,
		fmt.Sprintf("indexed=%d unchanged=%d removed=%d failed=%d", rep.Indexed, rep.Unchanged, rep.Removed, len(rep.Failed)))
}

// setPin records the embedder of the vault's vectors; a rebuild's pin is
// recorded when it commits.
func (x *indexer) setPin(ctx context.Context, p store.Pin) error {
	if x.build != nil {
		x.pin, x.pinned = p, true
		return nil
	}
	if err := x.s.reg.SetPin(ctx, x.v.ID, &p); err != nil {
		return fmt.Errorf("pin the embedder of vault %q: %w", x.v.Name, err)
	}
	x.pin, x.pinned = p, true
	return nil
}

// documents lists the indexable files of v under prefix (a file or a
// folder as resolve names it, "." for the whole vault) by their names in
// the vault, through files, which never lists hidden files and folders
// (ctxkit's data folder among them). A file that resolve refuses as
// leading out of the vault is left out; one it refuses otherwise is
// returned in failed. A prefix that is neither a file nor a folder is
// ErrNotFound.
func (s *Service) documents(ctx context.Context, v *Vault, files store.Files, prefix string) (names []string, failed []FileError, err error) {
	add := func(p string) {
		if !extract.Supported(p) {
			return
		}
		_, name, err := s.resolve(v, p)
		switch {
		case err == nil:
			names = append(names, name)
		case !errors.Is(err, ErrOutside): // outside: a symlink leading out
			failed = append(failed, FileError{Path: p, Error: hidePaths(err)})
		}
	}
	dir := prefix
	if prefix == "." {
		dir = ""
	} else {
		_, err := files.Stat(ctx, prefix)
		if err == nil {
			add(prefix)
			return names, failed, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, nil, fmt.Errorf("vault %q: %w", v.Name, err)
		}
	}
	err = files.Walk(ctx, dir, func(fi store.FileInfo) error {
		add(fi.Path)
		return nil
	})
	if errors.Is(err, store.ErrNotFound) && dir != "" {
		return nil, nil, noDocument(v, prefix)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list the files of vault %q: %w", v.Name, err)
	}
	return names, failed, nil
}

// file indexes the file named rel, read from the vault's files unless
// data is given, unless unchanged (nil: never) says the index holds it as
// it is; it reports whether it did and how many chunks it stored.
func (x *indexer) file(ctx context.Context, rel string, data []byte, meta map[string]string, unchanged func(hash string) bool) (bool, int, error) {
	if data == nil {
		var err error
		if data, err = x.files.Read(ctx, rel); err != nil {
			return false, 0, err
		}
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if unchanged != nil && unchanged(hash) {
		return false, 0, nil
	}
	doc, err := extractWithin(ctx, rel, data, DefaultFileTimeout)
	if err != nil {
		return false, 0, err
	}
	pieces := chunk.Split(doc, chunk.Options{})
	chunks := make([]index.Chunk, len(pieces))
	texts := make([]string, len(pieces))
	for i, c := range pieces {
		loc := index.Locator{Unit: index.Unit(c.Loc.Unit), Start: c.Loc.Start, End: c.Loc.End} // extract's units are index's
		chunks[i] = index.Chunk{Text: c.Text, Heading: c.HeadingPath, Loc: loc}
		texts[i] = c.Text
	}
	if x.e != nil && len(texts) > 0 {
		vectors, err := x.e.Embed(ctx, texts)
		if err != nil && ctx.Err() != nil {
			return false, 0, err
		}
		if err != nil {
			return false, 0, &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf("embed with %s: %s", x.e.Spec(), hidePaths(err)),
				Fix: "check that the embedder answers, then index the vault again"}
		}
		for i := range chunks {
			chunks[i].Vector = vectors[i]
		}
		switch {
		case !x.pinned:
			if err := x.setPin(ctx, store.Pin{Model: x.e.Spec(), Dim: len(vectors[0])}); err != nil {
				return false, 0, err
			}
		case len(vectors[0]) != x.pin.Dim:
			return false, 0, fmt.Errorf("%s returned vectors of %d dimensions; the index holds %d", x.e.Spec(), len(vectors[0]), x.pin.Dim)
		}
	}
	// Metadata given when the file was written survives reindexing.
	put := x.idx.Put
	if x.build != nil {
		put = x.build.Put
	}
	if err := put(ctx, index.Doc{Path: rel, Hash: hash, Meta: meta}, chunks); err != nil {
		return false, 0, err
	}
	return true, len(chunks), nil
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

// DocInfo is an indexed document of a semantic vault.
type DocInfo struct {
	// ID is the document's id, DocID of its path.
	ID     string `json:"id" jsonschema:"the document's id: the hex SHA-256 of its path"`
	Path   string `json:"path" jsonschema:"the document's path in the vault"`
	Chunks int    `json:"chunks"`
	// Indexed is when it was last indexed (UTC).
	Indexed time.Time `json:"indexed"`
	// Metadata was given when the document was written (with written_by
	// and written_at).
	Metadata map[string]string `json:"metadata" jsonschema:"metadata given when the document was written"`
}

// Docs lists a semantic vault's indexed documents, by path.
func (s *Service) Docs(ctx context.Context, c Caller, name string) ([]DocInfo, error) {
	v, err := s.open(ctx, c, name, Read, "list-docs", "", Semantic)
	if err != nil {
		return nil, err
	}
	idx, err := s.b.Index(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	docs, err := idx.Docs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DocInfo, len(docs))
	for i, d := range docs {
		meta := d.Meta
		if meta == nil {
			meta = map[string]string{}
		}
		out[i] = DocInfo{ID: DocID(d.Path), Path: d.Path, Chunks: d.Chunks, Indexed: d.Indexed.UTC(), Metadata: meta}
	}
	return out, nil
}

// DocID is the id of the document at path (its canonical name in the
// vault): the hex SHA-256 of the path, as CtxVault makes document ids, so
// that a document is addressable without its path's characters.
func DocID(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:])
}

// DocText is a document's text as extracted for indexing.
type DocText struct {
	Path string `json:"path"`
	// Title is the document's title where the format has one.
	Title string `json:"title,omitempty"`
	// Text is the extracted text: headings and paragraphs separated by
	// blank lines (Markdown headings keep their #), pages by a form feed.
	Text  string `json:"text" jsonschema:"the extracted text: paragraphs separated by blank lines, pages by a form feed"`
	Bytes int64  `json:"bytes" jsonschema:"the file's size"`
}

// ReadDoc returns the text of one document of a semantic vault.
func (s *Service) ReadDoc(ctx context.Context, c Caller, name, path string) (*DocText, error) {
	v, err := s.open(ctx, c, name, Read, "read-doc", path, Semantic)
	if err != nil {
		return nil, err
	}
	return s.readDoc(ctx, v, path)
}

// ReadDocByID is ReadDoc of the indexed document with this id (DocID).
func (s *Service) ReadDocByID(ctx context.Context, c Caller, name, id string) (*DocText, error) {
	v, err := s.open(ctx, c, name, Read, "read-doc", id, Semantic)
	if err != nil {
		return nil, err
	}
	idx, err := s.b.Index(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	docs, err := idx.Docs(ctx)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if DocID(d.Path) == id {
			return s.readDoc(ctx, v, d.Path)
		}
	}
	return nil, &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("no document with id %s in vault %q", id, v.Name), Field: "id",
		Fix: "list the vault's documents to see their ids"}
}

func (s *Service) readDoc(ctx context.Context, v *Vault, path string) (*DocText, error) {
	_, rel, err := s.resolve(v, path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, noDocument(v, path)
	}
	files, err := s.files(ctx, v)
	if err != nil {
		return nil, err
	}
	fi, err := files.Stat(ctx, rel)
	if errors.Is(err, store.ErrNotFound) {
		return nil, noDocument(v, path)
	}
	if err != nil {
		return nil, err
	}
	if !extract.Supported(rel) {
		return nil, unsupported(path)
	}
	// Too large a file is refused before it is read, as extract would.
	if fi.Size > MaxDocBytes {
		return nil, &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("%s cannot be read: extract %s: over %d bytes: %v", rel, rel, MaxDocBytes, extract.ErrTooLarge), Field: "path"}
	}
	data, err := files.Read(ctx, rel)
	if errors.Is(err, store.ErrNotFound) {
		return nil, noDocument(v, path)
	}
	if err != nil {
		return nil, err
	}
	doc, err := extract.ExtractBytes(ctx, rel, data) // errors name the document, never its folder
	if err != nil {
		// The document is the problem, not the service.
		return nil, &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("%s cannot be read: %v", rel, err), Field: "path"}
	}
	var b strings.Builder
	page := 0
	for _, bl := range doc.Blocks {
		if b.Len() > 0 {
			if doc.Unit == extract.Pages && bl.Pos != page {
				b.WriteString("\n\f\n")
			} else {
				b.WriteString("\n\n")
			}
		}
		page = bl.Pos
		if bl.Kind == extract.Heading {
			b.WriteString(strings.Repeat("#", max(bl.Level, 1)) + " ")
		}
		b.WriteString(bl.Text)
	}
	return &DocText{Path: rel, Title: doc.Title, Text: b.String(), Bytes: int64(len(data))}, nil
}

func noDocument(v *Vault, path string) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf("no document %q in vault %q", path, v.Name), Field: "path",
		Fix: "list the vault's documents to see their paths"}
}

func unsupported(path string) error {
	return invalid("path", "%q is not a document type the vault indexes (.md .txt .pdf .docx .html .json .csv)", path)
}

// MaxDocBytes bounds a document written through the service: the most a
// file may hold and still be indexed.
const MaxDocBytes = extract.DefaultMaxBytes

// WriteDocRequest is a document written into a semantic vault, at a path
// the operation names.
type WriteDocRequest struct {
	Content   string            `json:"content" jsonschema:"the document's text"`
	Overwrite bool              `json:"overwrite,omitempty" jsonschema:"replace an existing document at path; without it an existing one is refused"`
	Metadata  map[string]string `json:"metadata,omitempty" jsonschema:"kept with the document in the index, across reindexing"`
}

// WriteDocResult says what was written.
type WriteDocResult struct {
	Vault string `json:"vault"`
	Path  string `json:"path" jsonschema:"the document's path in the vault"`
	Bytes int    `json:"bytes"`
}

// WriteDoc stores a document and indexes it at once; the file is replaced
// atomically. An existing file is refused (ErrExists) unless Overwrite is
// set. The metadata gets written_by (the caller) and written_at.
// The path is relative to the vault, like notes/2026-03-01-meeting.md; its
// extension picks the format.
func (s *Service) WriteDoc(ctx context.Context, c Caller, name, path string, req WriteDocRequest) (WriteDocResult, error) {
	v, err := s.open(ctx, c, name, Write, "write-doc", path, Semantic)
	if err != nil {
		return WriteDocResult{}, err
	}
	if strings.TrimSpace(path) == "" {
		return WriteDocResult{}, invalid("path", "name the document: a path in the vault, like notes/meeting.md")
	}
	_, rel, err := s.resolve(v, path)
	if err != nil {
		return WriteDocResult{}, err
	}
	if !extract.Supported(rel) {
		return WriteDocResult{}, unsupported(path)
	}
	if len(req.Content) > MaxDocBytes {
		return WriteDocResult{}, invalid("content", "a document of %d bytes is over the %d-byte limit", len(req.Content), MaxDocBytes)
	}
	exists := &Error{Kind: ErrExists, Msg: fmt.Sprintf("%s exists in vault %q", rel, v.Name), Field: "path",
		Fix: "set overwrite to replace it, or choose another path"}
	files, err := s.files(ctx, v)
	if err != nil {
		return WriteDocResult{}, err
	}
	if _, err := files.Stat(ctx, rel); err == nil && !req.Overwrite {
		return WriteDocResult{}, exists
	}
	x, err := s.indexerFor(ctx, v, false)
	if err != nil {
		return WriteDocResult{}, err
	}
	if err := x.files.Write(ctx, rel, []byte(req.Content), req.Overwrite); err != nil {
		return WriteDocResult{}, s.writeErr(v, path, rel, exists, err)
	}
	meta := maps.Clone(req.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["written_by"] = c.String()
	meta["written_at"] = s.now().UTC().Format(episodic.TimeFormat) // as every time ctxkit writes
	if err := s.reg.SetDocMeta(ctx, v.ID, map[string]map[string]string{rel: meta}); err != nil {
		return WriteDocResult{}, fmt.Errorf("record the metadata of %s: %w", rel, err)
	}
	if _, _, err := x.file(ctx, rel, []byte(req.Content), meta, nil); err != nil {
		// The file is written: say so, so that a retry overwrites it.
		return WriteDocResult{}, fmt.Errorf("%s was written but not indexed (write it again with overwrite, or index the vault): %w", rel, err)
	}
	s.audit(ctx, v, c, "write-doc", rel, "")
	return WriteDocResult{Vault: v.Name, Path: rel, Bytes: len(req.Content)}, nil
}

// DeleteDoc removes a document, or every document under a folder, from the
// vault and its index, and returns the paths removed.
func (s *Service) DeleteDoc(ctx context.Context, c Caller, name, path string) ([]string, error) {
	v, err := s.open(ctx, c, name, Write, "delete-doc", path, Semantic)
	if err != nil {
		return nil, err
	}
	_, rel, err := s.resolve(v, path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, invalid("path", "name a file or folder of vault %q to delete", v.Name)
	}
	vf, err := s.files(ctx, v)
	if err != nil {
		return nil, err
	}
	_, err = vf.Stat(ctx, rel)
	switch {
	case err == nil && !extract.Supported(rel):
		return nil, unsupported(path)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("delete %s: %w", rel, err)
	}
	files, _, err := s.documents(ctx, v, vf, rel)
	if errors.Is(err, ErrNotFound) {
		return nil, noDocument(v, path)
	}
	if err != nil {
		return nil, err
	}
	idx, err := s.b.Index(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	deleted := []string{}
	gone := map[string]map[string]string{}
	defer func() {
		if len(gone) > 0 {
			if err := s.reg.SetDocMeta(context.WithoutCancel(ctx), v.ID, gone); err != nil {
				s.log.Warn("vault: forget the metadata of deleted documents", "vault", v.Name, "err", err)
			}
		}
	}()
	for _, rel := range files {
		// A file removed meanwhile is deleted all the same.
		if err := vf.Remove(ctx, rel); err != nil && !errors.Is(err, store.ErrNotFound) {
			return deleted, fmt.Errorf("delete %s: %w", rel, err)
		}
		if err := idx.Delete(ctx, rel); err != nil {
			return deleted, err
		}
		deleted = append(deleted, rel)
		gone[rel] = nil
		s.audit(ctx, v, c, "delete-doc", rel, "")
	}
	return deleted, nil
}

// writeErr is the answer to a failed write of path (rel as resolve named
// it) into v's files: exists when a file, or a folder, is in the way.
func (s *Service) writeErr(v *Vault, path, rel string, exists *Error, err error) error {
	switch {
	case errors.Is(err, store.ErrExists):
		return exists
	case errors.Is(err, store.ErrInvalidPath):
		return outside(path, "leads out of the vault, or to a hidden file or folder")
	}
	return fmt.Errorf("write %s: %w", rel, err)
}
