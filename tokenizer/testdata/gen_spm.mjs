// gen_spm.mjs writes t5tiny.json and golden/t5tiny.json: a small
// SentencePiece Unigram model (t5tiny.model, trained by spm_train on the
// repository's README and ARCHITECTURE, default nmt_nfkc normalization)
// converted the way transformers converts T5 (spm2json.go), and the ids
// SentencePiece itself gives each single-line text (spm_encode, Debian's
// sentencepiece package). It checks the Precompiled normalizer and
// Unigram against the original library.
//
//   apt-get install sentencepiece
//   node tokenizer/testdata/gen_spm.mjs
//
// The model was made with:
//   spm_train --input=train.txt --model_prefix=t5tiny --vocab_size=1000 \
//     --hard_vocab_limit=false --model_type=unigram --character_coverage=0.9995
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";
import { texts } from "./texts.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const model = join(here, "t5tiny.model");
const json = execFileSync("go", ["run", join(here, "spm2json.go"), model], { encoding: "utf8" });
writeFileSync(join(here, "t5tiny.json"), json);

// spm_encode reads one text a line; control symbols in the text are
// plain text to SentencePiece but added tokens to tokenizer.json.
const lines = texts.filter((t) => !/[\r\n\u2028\u2029\u0085]/.test(t) && !/<\/?s>|<unk>/.test(t));
const cases = [];
const encode = (input) => execFileSync("spm_encode", [`--model=${model}`, "--output_format=id"], { input, encoding: "utf8" })
  .split("\n").slice(0, -1).map((l) => (l === "" ? [] : l.split(" ").map(Number)));
encode(lines.join("\n") + "\n").forEach((ids, i) => cases.push({ text: lines[i], ids }));
const root = join(here, "..", "..", "..", "shared", "corpus");
for (const rel of ["isolation/public/neural_networks.txt", "isolation/public/quantum_computing.txt", "research-vault/blog_article.txt"]) {
  const p = join(root, rel);
  if (!existsSync(p)) continue;
  const ls = readFileSync(p, "utf8").split("\n");
  const keep = ls.map((l, i) => [l, i]).filter(([l]) => !/[\r\u2028\u2029\u0085]/.test(l) && !/<\/?s>|<unk>/.test(l));
  encode(keep.map(([l]) => l).join("\n") + "\n").forEach((ids, k) => cases.push({ source: rel, line: keep[k][1], ids }));
}
writeFileSync(join(here, "golden", "t5tiny.json"), JSON.stringify({
  tokenizer: "tokenizer/testdata/t5tiny.json",
  reference: "SentencePiece " + execFileSync("dpkg-query", ["-W", "-f=${Version}", "sentencepiece"], { encoding: "utf8" }) + " spm_encode",
  cases,
}) + "\n");
console.log(`t5tiny: ${cases.length} cases`);
