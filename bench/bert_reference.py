#!/usr/bin/python3
"""Independent reference for vault/embed/bert: a BERT tokenizer and forward
pass written with numpy (float64), NOT PyTorch: torch is not installed on
the machines this was written on (Debian's python3-numpy is).

Run from the repository root:  /usr/bin/python3 bench/bert_reference.py
(Debian's python3 with python3-numpy: apt-get install python3-numpy)
It rewrites vault/embed/bert/testdata/:
  tiny/       a random BERT (2 layers, hidden 32, 4 heads, intermediate 64),
              seed 8: config.json, vocab.txt, tokenizer.json,
              1_Pooling/config.json, model.safetensors, golden.json
  minilm_golden.json   embeddings of a MiniLM-shaped model (6 layers, hidden
              384, 12 heads, intermediate 1536) whose weights are not
              committed but computed by weightgen (below), which the Go
              test reproduces bit for bit
  tokenizer.golden     tokenizer cases: a JSON string, a tab, the pieces
"""
import json, math, os, struct, unicodedata
import numpy as np

OUT = "vault/embed/bert/testdata"

# ---------------------------------------------------------------- vocab
WORDS = """the quick brown fox jump over lazy dog cloud cost cut by financial
constraint hello world un cafe naive a an and or is was be to of in on at for
with as it this that he she we they you i my your our their model vector
search vault memory text token word piece chunk budget money price cheap
expensive save spend reduce increase percent year month day time go run walk
talk say said make made know think see look want give use find tell ask work
seem feel try leave call good new first last long great little own other old
right big high different small large next early young important few public
bad same able""".split()
SUFFIX = "s ed ing ly er est able aff tion ment ness".split()
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
vocab += list(".,!?'-()\"%:;$&")
vocab += [chr(c) for c in range(ord("a"), ord("z") + 1)]
vocab += ["##" + chr(c) for c in range(ord("a"), ord("z") + 1)]
vocab += [str(d) for d in range(10)] + ["##" + str(d) for d in range(10)]
vocab += ["中", "文", "日", "本", "語"]
vocab += [w for w in WORDS if w not in vocab]
vocab += ["##" + s for s in SUFFIX if "##" + s not in vocab]
assert len(set(vocab)) == len(vocab)
VOCAB = {t: i for i, t in enumerate(vocab)}

# ---------------------------------------------------------------- tokenizer
def is_ws(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"

def is_ctrl(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")

def is_punct(c):
    o = ord(c)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(c).startswith("P")

def is_cjk(o):
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x20000 <= o <= 0x2A6DF
            or 0x2A700 <= o <= 0x2B73F or 0x2B740 <= o <= 0x2B81F or 0x2B820 <= o <= 0x2CEAF
            or 0xF900 <= o <= 0xFAFF or 0x2F800 <= o <= 0x2FA1F)

def words(text):
    out = []
    for c in text:
        if ord(c) == 0 or ord(c) == 0xFFFD or is_ctrl(c):
            continue
        if is_ws(c):
            out.append(" ")
        elif is_cjk(ord(c)):
            out.append(" " + c + " ")
        else:
            out.append(c)
    s = "".join(out).lower()
    s = "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")
    ws, cur = [], ""
    for c in s:
        if is_ws(c):
            if cur: ws.append(cur); cur = ""
        elif is_punct(c):
            if cur: ws.append(cur); cur = ""
            ws.append(c)
        else:
            cur += c
    if cur: ws.append(cur)
    return ws

def wordpiece(w, max_chars=100):
    if len(w) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(w):
        end, cur = len(w), None
        while end > start:
            p = w[start:end]
            if start > 0: p = "##" + p
            if p in VOCAB:
                cur = p; break
            end -= 1
        if cur is None:
            return ["[UNK]"]
        pieces.append(cur); start = end
    return pieces

def encode(text, max_len=512):
    toks = ["[CLS]"]
    for w in words(text):
        toks += wordpiece(w)
    toks = toks[:max_len - 1] + ["[SEP]"]
    return [VOCAB[t] for t in toks], toks

# ---------------------------------------------------------------- forward
def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b

def erf(x):
    return np.vectorize(math.erf)(x)

def forward(W, cfg, ids, pooling):
    """One sequence, no padding: W maps HF names to float64 arrays."""
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    d, S, eps = H // nh, len(ids), cfg["layer_norm_eps"]
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:S] \
        + W["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
    lin = lambda x, p: x @ W[p + ".weight"].T + W[p + ".bias"]
    for l in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % l
        q = lin(x, p + "attention.self.query").reshape(S, nh, d).transpose(1, 0, 2)
        k = lin(x, p + "attention.self.key").reshape(S, nh, d).transpose(1, 0, 2)
        v = lin(x, p + "attention.self.value").reshape(S, nh, d).transpose(1, 0, 2)
        sc = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        sc /= sc.sum(-1, keepdims=True)
        ctx = (sc @ v).transpose(1, 0, 2).reshape(S, H)
        x = layer_norm(x + lin(ctx, p + "attention.output.dense"),
                       W[p + "attention.output.LayerNorm.weight"], W[p + "attention.output.LayerNorm.bias"], eps)
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = layer_norm(x + lin(h, p + "output.dense"),
                       W[p + "output.LayerNorm.weight"], W[p + "output.LayerNorm.bias"], eps)
    v = x[0] if pooling == "cls" else x.mean(0)
    return v / np.linalg.norm(v)

# ---------------------------------------------------------------- weights
def shapes(cfg):
    H, I = cfg["hidden_size"], cfg["intermediate_size"]
    out = {
        "embeddings.word_embeddings.weight": (cfg["vocab_size"], H),
        "embeddings.position_embeddings.weight": (cfg["max_position_embeddings"], H),
        "embeddings.token_type_embeddings.weight": (cfg["type_vocab_size"], H),
        "embeddings.LayerNorm.weight": (H,), "embeddings.LayerNorm.bias": (H,),
    }
    for l in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % l
        for n in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            out[p + n + ".weight"], out[p + n + ".bias"] = (H, H), (H,)
        out[p + "intermediate.dense.weight"], out[p + "intermediate.dense.bias"] = (I, H), (I,)
        out[p + "output.dense.weight"], out[p + "output.dense.bias"] = (H, I), (H,)
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[p + n + ".weight"], out[p + n + ".bias"] = (H,), (H,)
    return out

def fnv1a(s):
    h = 2166136261
    for c in s.encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h

def weightgen(name, shape):
    """Deterministic float32 weights from integer hashing (no RNG, no libm),
    mirrored by weightGen in the Go tests: v = (u - 2^23) / 2^23 with u the
    top 24 bits of a 32-bit hash of (name, index), then scaled by a power of
    two per kind of tensor (LayerNorm gains are 1 + v/8)."""
    n = int(np.prod(shape))
    M = np.uint64(0xFFFFFFFF)
    h = (np.arange(n, dtype=np.uint64) * np.uint64(2654435761) + np.uint64(fnv1a(name))) & M
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(2246822519)) & M
    h ^= h >> np.uint64(13)
    v = ((h >> np.uint64(8)).astype(np.float32) - np.float32(1 << 23)) / np.float32(1 << 23)
    if "LayerNorm.weight" in name:
        v = np.float32(1) + v * np.float32(0.125)
    elif "LayerNorm.bias" in name:
        v = v * np.float32(0.0625)
    elif "embeddings" in name:
        v = v * np.float32(0.5)
    elif name.endswith(".bias"):
        v = v * np.float32(0.03125)
    else:
        v = v * np.float32(0.0625)
    return v.astype(np.float32).reshape(shape)

def write_safetensors(path, tensors):
    header, off, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Cut cloud costs by 15%!",
    "Financial constraints",
    "Hello, world",
    "Café naïve — un-affable?",
    "中文 and 日本語 text",
    "a",
]

def main():
    # tiny model
    cfg = {"architectures": ["BertModel"], "model_type": "bert", "vocab_size": len(vocab), "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
           "max_position_embeddings": 64, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu"}
    d = os.path.join(OUT, "tiny")
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    rng = np.random.default_rng(8)
    W32 = {}
    for name, shape in shapes(cfg).items():
        if "LayerNorm.weight" in name:
            W32[name] = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            W32[name] = (0.2 * rng.standard_normal(shape)).astype(np.float32)
    # Written with the "bert." prefix of BertForXxx checkpoints.
    write_safetensors(os.path.join(d, "model.safetensors"), {"bert." + k: v for k, v in W32.items()})
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    open(os.path.join(d, "vocab.txt"), "w").write("\n".join(vocab) + "\n")
    json.dump({"word_embedding_dimension": 32, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
               "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False},
              open(os.path.join(d, "1_Pooling", "config.json"), "w"), indent=2)
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                         "strip_accents": None, "lowercase": True},
          "pre_tokenizer": {"type": "BertPreTokenizer"},
          "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                    "max_input_chars_per_word": 100, "vocab": VOCAB}}
    json.dump(tj, open(os.path.join(d, "tokenizer.json"), "w"), indent=1, ensure_ascii=False)
    W = {k: v.astype(np.float64) for k, v in W32.items()}
    gold = {"reference": "numpy float64 (bench/bert_reference.py); torch not installed", "sentences": SENTENCES,
            "ids": [], "mean": [], "cls": []}
    for s in SENTENCES:
        ids, _ = encode(s)
        gold["ids"].append(ids)
        gold["mean"].append([float(x) for x in forward(W, cfg, ids, "mean")])
        gold["cls"].append([float(x) for x in forward(W, cfg, ids, "cls")])
    json.dump(gold, open(os.path.join(d, "golden.json"), "w"), indent=1, ensure_ascii=False)

    # MiniLM-shaped model, weights from weightgen
    mcfg = dict(cfg, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
                max_position_embeddings=512)
    MW = {n: weightgen(n, sh).astype(np.float64) for n, sh in shapes(mcfg).items()}
    mg = {"reference": gold["reference"], "config": mcfg, "sentences": SENTENCES[:3], "ids": [], "mean": []}
    for s in SENTENCES[:3]:
        ids, _ = encode(s)
        mg["ids"].append(ids)
        mg["mean"].append([float(x) for x in forward(MW, mcfg, ids, "mean")])
    json.dump(mg, open(os.path.join(OUT, "minilm_golden.json"), "w"), indent=1, ensure_ascii=False)

    # tokenizer cases
    cases = SENTENCES + [
        "HeLLo WoRLD", "  leading and\ttrailing\n white  space ", "Ünïcödé àccents: ÀÉÎÕÜ",
        "punct:a,b.c!d?e(f)g", "multi---dash ...dots", "jumping jumped jumps quickly",
        "unknownword xyz123", "qqqqqqqqqq", "x" * 100, "x" * 101, "a\u0000b\u0007c\u200bd\ufffde",
        "日本語のテキスト", "emoji 😀 here", "tab\tnew\nline\rcr", "“quoted” ‘text’", "$5 & 10% off;",
        "", "   ", "no-break\u00a0space", "ﬁ ligature", "Ωmega ß",
    ]
    with open(os.path.join(OUT, "tokenizer.golden"), "w") as f:
        f.write("# input (JSON string) <TAB> pieces; written by bench/bert_reference.py\n")
        for c in cases:
            _, toks = encode(c)
            f.write(json.dumps(c, ensure_ascii=False) + "\t" + " ".join(toks) + "\n")

if __name__ == "__main__":
    main()
