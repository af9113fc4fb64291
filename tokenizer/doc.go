// Package tokenizer reads a Hugging Face tokenizer.json and encodes text
// into the same token ids as the reference implementation, so that the
// guard can count a prompt exactly instead of estimating it, and the
// vault's built-in BERT embedder (vault/embed/bert) gets the ids its model
// was trained on. NewWordPiece builds BERT's pipeline from a bare
// vocabulary (a vocab.txt) for models that ship no tokenizer.json.
//
// It implements the pipeline of the tokenizers library: added tokens are
// split out of the raw text first (leftmost-longest, with their lstrip,
// rstrip and single_word options; tokens marked normalized are matched
// after normalization), the rest is normalized, pre-tokenized and handed
// to the model. No special tokens are added (add_special_tokens=False);
// truncation, padding, the post-processor and the decoder are ignored.
//
// Supported components:
//
//   - models: BPE (byte-level as GPT-2, Llama 3 and Qwen use it, merges as
//     "a b" strings or [a, b] pairs (one form a file), ignore_merges; SentencePiece-style with
//     byte_fallback and fuse_unk as Llama 2, Mistral and Gemma use it;
//     continuing_subword_prefix, end_of_word_suffix), WordPiece (BERT),
//     Unigram (T5, XLM-R: Viterbi, unknown pieces fused, byte_fallback) and
//     WordLevel;
//   - normalizers: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents,
//     BertNormalizer, Nmt, Prepend, Replace (String or Regex), Strip, Precompiled
//     (SentencePiece's compiled rules: the double-array trie is read and
//     the longest known prefix replaced, as SentencePiece does) and
//     Sequence;
//   - pre-tokenizers: ByteLevel (with its GPT-2 regex), Split (String or
//     Regex, every behavior, invert), Metaspace, Whitespace,
//     WhitespaceSplit, CharDelimiterSplit, BertPreTokenizer, Digits,
//     Punctuation and Sequence.
//
// Anything else (another model or component type, BPE dropout) is refused
// by Parse with an error that names it, never counted wrongly. Split
// regexes are Oniguruma patterns with lookahead (`\s+(?!\S)`), which Go's
// regexp lacks; they run on github.com/dlclark/regexp2, except the GPT-2
// and Llama 3 / Qwen 2 patterns, which have hand-written scanners.
//
// The package is hand-written because no pure-Go library reads the
// tokenizer.json files of current models correctly. The most complete one,
// github.com/sugarme/tokenizer v0.3.0 (September 2025), was run on this
// package's goldens (2026-11-30): it panics on Llama 3's and Qwen 3's files
// (their split pattern has a lookahead, which Go's regexp refuses) and on
// the Unigram ones, and gives the reference's ids for 16 of 30 Llama 2 texts
// and 25 of 30 BERT texts; other pure-Go readers cover byte-level BPE only. Conformance is checked
// against the JavaScript port of the reference (@huggingface/tokenizers)
// on real tokenizer.json files (testdata/gen.mjs), and for Precompiled
// and Unigram against SentencePiece itself (testdata/gen_spm.mjs).
//
// A *Tokenizer is immutable after Parse apart from an internal, bounded,
// locked word cache, and is safe for concurrent use; it satisfies
// guard/compact.Counter.
package tokenizer
