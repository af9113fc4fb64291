package vault

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/ctxkit/ctxkit/store"
	"github.com/ctxkit/ctxkit/vault/embed"
	"github.com/ctxkit/ctxkit/vault/index"
)

// QueryRequest searches a semantic vault.
type QueryRequest struct {
	Query string `json:"query" jsonschema:"what you are looking for, in words likely to appear in the documents"`
	// NResults defaults to DefaultQueryResults, at most MaxQueryResults.
	NResults int `json:"n_results,omitempty" jsonschema:"how many passages, 1 to 100; default 5"`
	// Lexical searches the words only (BM25), without the vault's
	// embedder: the one way to search a vault whose embedder is not
	// available, which is otherwise refused. The result's Mode says so.
	Lexical bool `json:"lexical,omitempty" jsonschema:"search by words only, without the vault's embedder: for a vault whose embedder is not available, which is otherwise refused"`
	// WithMetadata also answers each passage's document metadata, at the
	// cost of reading each document found.
	WithMetadata bool `json:"with_metadata,omitempty" jsonschema:"also give each passage's document metadata (as written with it)"`
}

// Passage is one passage a query found.
type Passage struct {
	Path    string `json:"path" jsonschema:"the document"`
	Heading string `json:"heading,omitempty" jsonschema:"the heading path of the passage (H1 > H2)"`
	// Locator is where the passage is in the document's file; nil for a
	// format without positions (HTML), and for a document indexed before
	// ctxkit recorded locators (QueryResult.Warning then says so).
	Locator *Locator `json:"locator,omitempty" jsonschema:"where the passage is in the document: its pages (PDF), paragraphs (DOCX) or lines (text, Markdown, CSV, JSON); absent for HTML, and for documents indexed before locators were recorded"`
	// Page is the page of the passage's first word in a PDF (Locator's
	// Start), as earlier versions gave it.
	Page  int    `json:"page,omitempty" jsonschema:"the PDF page the passage starts on (see locator for the range)"`
	Chunk int    `json:"chunk" jsonschema:"the passage's position in its document"`
	Text  string `json:"text"`
	// Metadata is the document's, as its writer gave it (WriteDoc), when
	// the request asked for it (WithMetadata).
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"the document's metadata, as written with it (with_metadata)"`
	Score    float64           `json:"score" jsonschema:"fused relevance, higher is better"`
	// The rank and score of each signal; 0 when it did not find the
	// passage.
	LexicalRank  int     `json:"lexical_rank,omitempty"`
	LexicalScore float64 `json:"lexical_score,omitempty"`
	VectorRank   int     `json:"vector_rank,omitempty"`
	VectorScore  float64 `json:"vector_score,omitempty"`
}

// Locator is where a passage is in its document's file: from Start to End
// (1-based, inclusive) in Unit.
type Locator struct {
	Unit  string `json:"unit" jsonschema:"page (PDF), paragraph (DOCX: its paragraphs that have text, headings and table cells included, from 1) or line (as an editor numbers them)"`
	Start int    `json:"start" jsonschema:"the first page, paragraph or line, from 1"`
	End   int    `json:"end" jsonschema:"the last, inclusive; equal to start when the passage is on one"`
	// Label is the locator for people: "pages 3-4", "page 3",
	// "paragraphs 2-5", "lines 10-24".
	Label string `json:"label" jsonschema:"the locator for people and citations: pages 3-4, page 3, paragraphs 2-5, lines 10-24"`
}

// locatorOf returns a chunk's locator as a passage shows it: nil when the
// chunk has none (and recorded false when it was indexed before ctxkit
// recorded them), and the page of its first word.
func locatorOf(l index.Locator) (loc *Locator, page int, recorded bool) {
	switch l.Unit {
	case index.Unrecorded:
		return nil, l.Start, false
	case "":
		return nil, 0, true
	case index.Page:
		page = l.Start
	}
	label := fmt.Sprintf("%s %d", l.Unit, l.Start)
	if l.End != l.Start {
		label = fmt.Sprintf("%ss %d-%d", l.Unit, l.Start, l.End)
	}
	return &Locator{Unit: string(l.Unit), Start: l.Start, End: l.End, Label: label}, page, true
}

// QueryResult is what a query found, best first.
type QueryResult struct {
	Results []Passage `json:"results" jsonschema:"best first; empty when nothing matched"`
	// Mode is "hybrid" (BM25 and vectors, fused by reciprocal rank) or
	// "lexical" (a vault without an embedder, or a query that asked for
	// lexical search).
	Mode string `json:"mode" jsonschema:"hybrid (words and meaning) or lexical (words only)"`
	// Warning says what degraded: what a lexical search asked for left out
	// (the vault's embedder, and whether it is available), and passages
	// without the locator an older index did not record.
	Warning string `json:"warning,omitempty"`
}

// checkN reads a count of results: 0 is def, else 1 to most.
func checkN(field string, n, def, most int) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 1 || n > most:
		return 0, invalid(field, "%s %d is out of range: give 1 to %d", field, n, most)
	}
	return n, nil
}

// QueryResults is the number of results a query for n returns: the
// default for 0, or an error (ErrInvalid, field n_results) outside 1 to
// MaxQueryResults. A front end that trims results itself asks it first.
func QueryResults(n int) (int, error) {
	return checkN("n_results", n, DefaultQueryResults, MaxQueryResults)
}

// Query searches a semantic vault: BM25 and, with an embedder, vector
// similarity, fused by reciprocal rank. No match is an empty list, not an
// error.
func (s *Service) Query(ctx context.Context, c Caller, name string, req QueryRequest) (*QueryResult, error) {
	v, err := s.open(ctx, c, name, Read, "query", "", Semantic)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Query) == "" {
		return nil, &Error{Kind: ErrInvalid, Msg: "Query text cannot be empty.", Fix: "say what you are looking for", Field: "query"}
	}
	n, err := QueryResults(req.NResults)
	if err != nil {
		return nil, err
	}
	var res *QueryResult
	if req.Lexical {
		res, err = s.lexicalQuery(ctx, v, req.Query, n)
	} else {
		var sr *searcher
		if sr, err = s.searcher(ctx, v); err == nil {
			res, err = sr.query(ctx, req.Query, n)
		}
	}
	if err != nil || !req.WithMetadata {
		return res, err
	}
	idx, err := s.b.Index(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	return res, docMeta(ctx, idx, res.Results)
}

// lexicalQuery searches v's words only, as asked, and says what that left
// out when the vault has an embedder.
func (s *Service) lexicalQuery(ctx context.Context, v *Vault, text string, n int) (*QueryResult, error) {
	idx, err := s.b.Index(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	res, err := (&searcher{idx: idx}).query(ctx, text, n)
	if err != nil {
		return nil, err
	}
	if spec := v.EmbeddingModel; spec != "" && spec != embed.None {
		res.Warning = fmt.Sprintf("searched by words only, as asked, without the vault's embedder %s", spec)
		if _, err := s.vaultEmbedder(v); errors.Is(err, ErrUnavailable) {
			res.Warning += ", which is not available here"
		}
	}
	return res, nil
}

// searcher answers queries on one vault with its index open and, for a
// server, its vectors and lexicon in memory, loaded once: at 100k chunks of
// 384 dimensions, 150 MB of vectors and about a second. The lexicon
// (index.Lexicon) finds and scores exactly as the index's BM25 does, in
// about a millisecond rather than tens; a one-shot query asks the index
// instead, with the same results, rather than pay for loading the lexicon.
type searcher struct {
	idx     index.Index
	e       embed.Embedder
	vectors *index.Vectors // nil: lexical only
	lexicon *index.Lexicon // nil: the index ranks
}

// pooledSearcher is a vault's searcher and the index generation and
// embedder it was loaded at.
type pooledSearcher struct {
	mu   sync.Mutex
	s    *searcher
	gen  int64
	spec string
	// loading is closed when the load under way ends (nil: none).
	loading chan struct{}
}

// searcher returns v's searcher: a fresh one without the lexicon, or with
// KeepSearchers the kept one, loaded again when the index has changed
// since (its generation moved, by a write of this process or another) or
// the vault's embedder did. A caller that finds it stale while another
// reloads it waits for that load rather than answer from the stale one:
// a write acknowledged before a query began is always seen by it.
func (s *Service) searcher(ctx context.Context, v *Vault) (*searcher, error) {
	if !s.keepSearchers {
		return s.loadSearcher(ctx, v, false)
	}
	s.searchMu.Lock()
	ps := s.searchers[v.ID]
	if ps == nil {
		ps = &pooledSearcher{}
		s.searchers[v.ID] = ps
	}
	s.searchMu.Unlock()
	idx, err := s.b.Index(ctx, v.ID)
	if errors.Is(err, store.ErrNotFound) {
		s.forgetSearcher(v.ID) // removed by another process
	}
	if err != nil {
		return nil, err
	}
	gen, err := idx.Generation(ctx)
	if err != nil {
		return nil, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	for {
		ps.mu.Lock()
		if ps.s != nil && ps.gen >= gen && ps.spec == v.EmbeddingModel {
			sr := ps.s
			ps.mu.Unlock()
			return sr, nil
		}
		wait := ps.loading
		if wait == nil {
			break // this caller loads it, still holding ps.mu
		}
		ps.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	done := make(chan struct{})
	ps.loading = done
	ps.mu.Unlock()
	// The generation is read again just before the load, so that what
	// is loaded is at least that generation.
	if g, err := idx.Generation(ctx); err == nil {
		gen = max(gen, g)
	}
	sr, err := s.loadSearcher(ctx, v, true)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.loading = nil
	close(done)
	if err != nil {
		return nil, err
	}
	ps.s, ps.gen, ps.spec = sr, gen, v.EmbeddingModel
	return sr, nil
}

// forgetSearcher drops a vault's kept searcher.
func (s *Service) forgetSearcher(vaultID string) {
	s.searchMu.Lock()
	defer s.searchMu.Unlock()
	delete(s.searchers, vaultID)
}

func (s *Service) loadSearcher(ctx context.Context, v *Vault, withLexicon bool) (*searcher, error) {
	em, err := s.embedding(ctx, v, false)
	if err != nil {
		return nil, err
	}
	idx, err := s.b.Index(ctx, v.ID)
	if err != nil {
		return nil, err
	}
	sr := &searcher{idx: idx}
	// The vectors and the lexicon load side by side.
	var wg sync.WaitGroup
	var vecErr, lexErr error
	if em.e != nil && em.vectors() {
		sr.e = em.e
		wg.Go(func() { sr.vectors, vecErr = index.LoadVectors(ctx, idx) })
	}
	if withLexicon {
		wg.Go(func() { sr.lexicon, lexErr = index.LoadLexicon(ctx, idx) })
	}
	wg.Wait()
	if errors.Is(lexErr, index.ErrInvalidUTF8) {
		sr.lexicon, lexErr = nil, nil // the index ranks, as the lexicon could not exactly
	}
	if err := errors.Join(vecErr, lexErr); err != nil {
		return nil, fmt.Errorf("vault %q: %w", v.Name, err)
	}
	return sr, nil
}

// lexical ranks by BM25 in the lexicon, or in the index without one.
func (sr *searcher) lexical(ctx context.Context, text string, n int) ([]index.Hit, error) {
	if sr.lexicon != nil {
		return sr.lexicon.Search(text, n), nil
	}
	return sr.idx.Lexical(ctx, text, n)
}

// docMeta fills the passages' Metadata from their documents, read once
// each.
func docMeta(ctx context.Context, idx index.Index, ps []Passage) error {
	meta := map[string]map[string]string{}
	for i := range ps {
		m, ok := meta[ps[i].Path]
		if !ok {
			d, err := idx.Doc(ctx, ps[i].Path)
			switch {
			case errors.Is(err, index.ErrNotFound):
				// deleted since the chunk was read: no metadata
			case err != nil:
				return err
			}
			m = d.Meta
			meta[ps[i].Path] = m
		}
		ps[i].Metadata = m
	}
	return nil
}

// query answers one query; it is safe for concurrent use. A chunk found in
// memory but removed from the index since the searcher was loaded is left
// out.
func (sr *searcher) query(ctx context.Context, text string, n int) (*QueryResult, error) {
	wide := max(4*n, 20) // each signal looks deeper than n, so fusion has room
	lexical, err := sr.lexical(ctx, text, wide)
	if err != nil {
		return nil, err
	}
	res := &QueryResult{Mode: "lexical", Results: []Passage{}}
	var vector []index.Hit
	if sr.vectors != nil {
		res.Mode = "hybrid"
		q, err := sr.e.Embed(ctx, []string{text})
		if err != nil {
			return nil, &Error{Kind: ErrUnavailable, Msg: fmt.Sprintf("embed the query with %s: %v", sr.e.Spec(), err),
				Fix: "check that the embedder is running, or retry later"}
		}
		if vector, err = sr.vectors.Search(q[0], wide); err != nil {
			return nil, err
		}
	}
	fused := index.Fuse(lexical, vector, n)
	byID := map[int64]index.Chunk{}
	var missing []int64
	for _, h := range lexical {
		if h.Doc != "" { // the index's hits carry the chunk, the lexicon's only its id
			byID[h.ID] = h.Chunk
		}
	}
	for _, f := range fused {
		if _, ok := byID[f.ID]; !ok {
			missing = append(missing, f.ID)
		}
	}
	if len(missing) > 0 {
		read, err := sr.idx.ChunksByID(ctx, missing)
		if err != nil {
			return nil, err
		}
		maps.Copy(byID, read)
	}
	unrecorded := 0
	for _, f := range fused {
		c, ok := byID[f.ID]
		if !ok {
			continue // deleted since the searcher was loaded
		}
		loc, page, recorded := locatorOf(c.Loc)
		if !recorded {
			unrecorded++
		}
		res.Results = append(res.Results, Passage{
			Path: c.Doc, Heading: c.Heading, Locator: loc, Page: page, Chunk: c.Index, Text: c.Text, Score: f.Score,
			LexicalRank: f.LexicalRank, LexicalScore: f.LexicalScore, VectorRank: f.VectorRank, VectorScore: f.VectorScore,
		})
	}
	if unrecorded > 0 {
		w := fmt.Sprintf("%d of these passages come from documents indexed before ctxkit recorded page ranges, paragraphs and lines, "+
			"so they have no locator: index the vault again to record them", unrecorded)
		res.Warning = strings.TrimPrefix(res.Warning+"; "+w, "; ")
	}
	return res, nil
}
