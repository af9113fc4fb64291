// Package tinymodel generates a tiny llama-architecture model that a real
// Ollama runs on a CPU in milliseconds a token, so that ctxkit's tests can
// put the guard in front of the real server instead of an emulator of it.
//
// The model is fixed: every call writes the same bytes. It has 2 layers,
// hidden size 64, 4 heads, random F32 weights from a fixed seed (its
// output is noise; the tests read the server's counts, cuts and errors,
// never the text), llama.context_length 8192 (ContextLength), and a
// byte-level BPE tokenizer of the GPT-2 kind: 256 byte tokens (GPT-2's
// byte-to-unicode mapping), the merges learned by byte-pair encoding on a
// small built-in English and code text (corpus.txt), and the control
// tokens <|endoftext|> (BOS), <|im_start|> and <|im_end|> (EOS) of the
// ChatML format (ChatTemplate). English comes out at about three bytes a
// token, code and logs at less, as with real models.
//
// WriteGGUF writes the model as GGUF v3, the file `ollama create` takes;
// TokenizerJSON gives the same vocabulary and merges as a Hugging Face
// tokenizer.json, which package tokenizer reads: the two count every text
// alike, which the tests check against the real server.
//
// The GGUF writer is hand-written (a page of code) rather than borrowed
// from Ollama's fs/ggml package: that package would make all of Ollama a
// dependency of ctxkit's module for one test fixture, and a writer of our
// own keeps the model independent of the server it is used to test.
package tinymodel
