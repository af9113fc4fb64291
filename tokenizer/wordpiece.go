package tokenizer

import "fmt"

// WordPieceOptions are the settings of NewWordPiece.
type WordPieceOptions struct {
	// Lowercase lower-cases the text; StripAccents removes its
	// non-spacing marks after NFD. BERT's uncased models set both.
	Lowercase, StripAccents bool
	// UnkToken stands for a word that the vocabulary cannot spell;
	// "[UNK]" if empty.
	UnkToken string
	// Prefix starts every piece after a word's first; "##" if empty.
	Prefix string
	// MaxWordChars is the longest word, in characters, that is split into
	// pieces; a longer one is UnkToken. 100 if 0.
	MaxWordChars int
}

// NewWordPiece returns the Tokenizer of a BERT vocabulary (token -> id,
// as in a vocab.txt) without a tokenizer.json: the same as a
// tokenizer.json with a BertNormalizer (clean_text and
// handle_chinese_chars on, lowercase and strip_accents from opts), a
// BertPreTokenizer and a WordPiece model, and no added tokens. The
// vocabulary must hold opts.UnkToken and no negative id; it is used, not
// copied, and must not be changed afterwards.
func NewWordPiece(vocab map[string]int, opts WordPieceOptions) (*Tokenizer, error) {
	if opts.UnkToken == "" {
		opts.UnkToken = "[UNK]"
	}
	if opts.Prefix == "" {
		opts.Prefix = "##"
	}
	if opts.MaxWordChars == 0 {
		opts.MaxWordChars = 100
	}
	wp, err := newWordPiece(vocab, opts.UnkToken, opts.Prefix, opts.MaxWordChars)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return &Tokenizer{
		norm:  bertNormalizer(true, true, opts.StripAccents, opts.Lowercase),
		pre:   splitter(bertPreTokenize),
		model: wp,
	}, nil
}
