// Package textsearch is what a text search means in ctxkit, on every
// backend, so that a query finds and ranks the same in memory as in SQLite.
//
// Tokens are those of SQLite FTS5's tokenizer "porter unicode61": runs of
// letters and digits by SQLite's own Unicode tables, folded to lower case
// without the diacritics of Latin letters ("École" → "ecole"), then stemmed
// by FTS5's Porter stemmer ("ecol"). Tokenize reproduces FTS5 token for
// token (the tests compare with fts5vocab), so a vault's in-memory Lexicon
// and its FTS5 table agree, and the offload store indexes terms computed
// in Go.
//
// Two readings of a query share these tokens. A vault query is its Words,
// any of which may match (MatchAny is the FTS5 expression). An offload
// query (ParseQuery) is terms separated by white space: a plain word
// matches the tokens whose stem starts with its stem ("parse" finds
// "parser", "ecole" finds "École"); any other term (C++, e-mail) matches
// where the folded text (Fold) holds it. Matcher finds a query's terms in
// one text, Docs in many prepared texts at once.
//
// Scores are FTS5's bm25() (IDF, Norm, Weight), and Rank orders the hits
// of an offload search: more distinct terms, then higher BM25, then
// position. Passages groups the matches in a text.
package textsearch
