// Package bert runs BERT-family sentence encoders (all-MiniLM-L6-v2,
// bge-small, e5-small, gte-small and others of the same architecture) in
// pure Go, with no cgo: the engine behind the "builtin" embedder.
//
// A model directory holds the files of a sentence-transformers model as
// published on the Hugging Face Hub: config.json, tokenizer.json (or
// vocab.txt), model.safetensors (F32, F16 or BF16) and 1_Pooling/config.json
// (mean or CLS pooling; mean when absent). [Load] reads them once into
// memory; [Model.Embed] tokenizes, runs the encoder on batches padded to
// their longest text with an attention mask, pools and L2-normalises.
//
// Texts longer than the model's maximum length (max_position_embeddings,
// or the tokenizer's truncation length when smaller) are truncated to
// their first word pieces: callers chunk long documents before embedding.
//
// Tokenization is package tokenizer's (github.com/ctxkit/ctxkit/tokenizer),
// with [CLS] and [SEP] added around the word pieces: a tokenizer.json is
// encoded as it says (for BERT models a BertNormalizer, BertPreTokenizer
// and WordPiece model); a vocab.txt alone gets BERT's uncased pipeline
// (tokenizer.NewWordPiece): control characters dropped, CJK ideographs
// split into single characters, accent stripping (NFD, combining marks
// removed) and lower-casing, splitting on white space and punctuation,
// then greedy longest-match WordPiece with "##" continuations, [UNK] for
// words that do not match or exceed 100 characters.
//
// The matrix products of the Linear layers are shared out over
// runtime.GOMAXPROCS goroutines in tiles. On amd64 CPUs with AVX2 and FMA
// (checked at run time) they use a hand-written assembly kernel
// (gemm_amd64.s: four rows of A against a panel of 16 output features,
// eight YMM accumulators) on weights packed into panels once at load;
// elsewhere a portable Go kernel register-blocked 2×4 (4×4 would spill
// on amd64's sixteen SSE registers). With the vector kernel, attention's
// Q·Kᵀ and P·V use it too, per head, and the GELU and softmax use float32
// erf and exp approximations (errors below 1e-6); LayerNorm is plain Go.
//
// # Correctness
//
// The forward pass and the tokenizer are checked against an independent
// implementation in numpy (float64), bench/bert_reference.py, whose
// outputs are committed in testdata: a random 2-layer model and a
// MiniLM-shaped one (6 layers, hidden 384, 12 heads) agree to 1e-5. The
// reference is numpy, not PyTorch, because torch is not installed on the
// machines this was written on.
package bert
