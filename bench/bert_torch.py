#!/usr/bin/python3
"""The same BERT forward pass in PyTorch, for issue 8: a second, independent
check of vault/embed/bert's MiniLM-shaped goldens (torch's own matmul,
layer_norm, GELU and softmax), and the speed of PyTorch on this CPU for the
shapes BenchmarkMiniLM measures, for the ratio in BENCHMARKS.md.

Debian's python3-torch (apt-get install python3-torch), run from the
repository root:
    /usr/bin/python3 bench/bert_torch.py
It reads the weights' formula and the tokenizer from bench/bert_reference.py
and the goldens from vault/embed/bert/testdata/minilm_golden.json; it
writes nothing.
"""
import json, math, os, sys, time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import bert_reference as ref  # noqa: E402

torch.set_num_threads(int(os.environ.get("THREADS", "2")))


def load(cfg):
    return {n: torch.from_numpy(ref.weightgen(n, sh)) for n, sh in ref.shapes(cfg).items()}


def forward(W, cfg, ids, mask):
    """ids, mask: [B, S] tensors; returns [B, H] mean-pooled, L2-normalised."""
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    d, eps = H // nh, cfg["layer_norm_eps"]
    B, S = ids.shape
    ln = lambda x, p: torch.nn.functional.layer_norm(x, (H,), W[p + ".weight"], W[p + ".bias"], eps)
    lin = lambda x, p: torch.nn.functional.linear(x, W[p + ".weight"], W[p + ".bias"])
    x = W["embeddings.word_embeddings.weight"][ids] + W["embeddings.position_embeddings.weight"][:S] \
        + W["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "embeddings.LayerNorm")
    bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -1e9
    for l in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % l
        split = lambda t: t.view(B, S, nh, d).transpose(1, 2)
        q, k, v = (split(lin(x, p + "attention.self." + n)) for n in ("query", "key", "value"))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(B, S, H)
        x = ln(x + lin(ctx, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        h = torch.nn.functional.gelu(lin(x, p + "intermediate.dense"))
        x = ln(x + lin(h, p + "output.dense"), p + "output.LayerNorm")
    m = mask[:, :, None].to(x.dtype)
    v = (x * m).sum(1) / m.sum(1)
    return torch.nn.functional.normalize(v, dim=-1)


def main():
    gold = json.load(open("vault/embed/bert/testdata/minilm_golden.json"))
    cfg = gold["config"]
    W = load(cfg)
    worst = 0.0
    with torch.inference_mode():
        for ids, want in zip(gold["ids"], gold["mean"]):
            t = torch.tensor([ids])
            got = forward(W, cfg, t, torch.ones_like(t))[0].numpy()
            worst = max(worst, float(np.abs(got - np.array(want)).max()))
    print("torch %s vs the numpy golden (float32 against float64): max |diff| %.2e over %d sentences"
          % (torch.__version__, worst, len(gold["ids"])))
    if worst > 1e-5:
        sys.exit("disagreement above 1e-5")

    print("threads %d" % torch.get_num_threads())
    with torch.inference_mode():
        for seq in (32, 128):
            for batch in (1, 32):
                ids = torch.randint(5, cfg["vocab_size"], (batch, seq))
                mask = torch.ones_like(ids)
                forward(W, cfg, ids, mask)  # warm up
                runs, start = 0, time.perf_counter()
                while time.perf_counter() - start < 3 or runs < 3:
                    forward(W, cfg, ids, mask)
                    runs += 1
                el = time.perf_counter() - start
                print("seq%d_batch%d %.1f sentences/s" % (seq, batch, runs * batch / el))


if __name__ == "__main__":
    main()
