"""Interpolated Kneser-Ney word trigrams: estimation from token ids and the model file's KN section.

The C core reads the section (csrc/model/kn.c, docs/format.md §2.5, docs/model_format.md field 13a) and only
adds and multiplies the probabilities stored here.  Estimation (Chen & Goodman 1998, interpolated, one
discount per order, D = n1 / (n1 + 2 n2) from that order's count-of-counts):

    p3(w|u,v) = max(c(uvw) - D3, 0) / c(uv.) + g3(uv) p2(w|v),        g3 = 1 - Σ_w of the first term
    p2(w|v)   = max(N(.vw) - D2, 0) / N(.v.) + g2(v) p1(w),           N(.vw) = #{u : c(uvw) > 0}
    p1(w)     = max(N(.w) - D1, 0) / N(..) + (D1 T1 / N(..)) / V,     N(.w)  = #{v : N(.vw) > 0}

(T1 the number of w with N(.w) > 0; a context never seen backs off with weight 1).  With ``min3`` > 1 the
trigrams seen fewer times are left out of the table and their mass goes to g3.  Everything is computed in
float64 and stored as float32.  The mixture weight λ (the network's share) is the section's first field;
``choose_lambda`` picks it by exact code length on dev text.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from ._model import Model


def _discount(counts: np.ndarray) -> float:
    n1 = int(np.sum(counts == 1))
    n2 = int(np.sum(counts == 2))
    return n1 / (n1 + 2 * n2) if n1 + n2 else 0.5


def _entries(w: np.ndarray, a: np.ndarray) -> bytes:
    e = np.empty(len(w), dtype=[("w", "<u4"), ("a", "<f4")])
    e["w"], e["a"] = w, a
    return e.tobytes()


def build_section(ids: np.ndarray, V: int, lam: float = 0.0, min3: int = 1) -> bytes:
    """The KN section for the token-id stream ids (int, 0..V-1; streams joined by two <end> ids).

    The first token's context is (<end>, <end>), as the codec's after a reset."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0 or ids.min() < 0 or ids.max() >= V:
        raise ValueError("token ids must be non-empty and in 0..V-1")
    s = np.concatenate([[1, 1], ids])
    key = (s[:-2] * V + s[1:-1]) * V + s[2:]                    # u·V² + v·V + w
    k3, c3 = np.unique(key, return_counts=True)
    ctx = k3 // V                                                # u·V + v
    w3 = k3 % V
    # ---- trigram level
    D3 = _discount(c3)
    cstart = np.flatnonzero(np.r_[True, ctx[1:] != ctx[:-1]])    # first entry of each context
    ctot = np.add.reduceat(c3, cstart).astype(np.float64)       # c(uv.)
    cid = np.repeat(np.arange(len(cstart)), np.diff(np.r_[cstart, len(ctx)]))
    a3 = np.maximum(c3 - D3, 0.0) / ctot[cid]
    keep = c3 >= min3
    kept_sum = np.bincount(cid[keep], weights=a3[keep], minlength=len(cstart))
    g3 = 1.0 - kept_sum
    # ---- bigram level: continuation counts N(.vw)
    k2, n2c = np.unique(k3 % (V * V), return_counts=True)       # v·V + w, #distinct u
    v2, w2 = k2 // V, k2 % V
    D2 = _discount(n2c)
    vtot = np.bincount(v2, weights=n2c, minlength=V)            # N(.v.)
    vtypes = np.bincount(v2, minlength=V)
    a2 = np.maximum(n2c - D2, 0.0) / vtot[v2]
    g2 = np.ones(V)
    seen = vtot > 0
    g2[seen] = D2 * vtypes[seen] / vtot[seen]
    o2 = np.r_[0, np.cumsum(vtypes)].astype("<u4")
    # ---- unigram level: N(.w)
    n1c = np.bincount(w2, minlength=V).astype(np.float64)
    D1 = _discount(n1c[n1c > 0].astype(np.int64))
    tot1 = n1c.sum()
    T1 = int(np.sum(n1c > 0))
    p1 = np.maximum(n1c - D1, 0.0) / tot1 + (D1 * T1 / tot1) / V
    # ---- the kept trigram contexts
    ctx_keep = np.bincount(cid[keep], minlength=len(cstart)) > 0
    k3c = ctx[cstart][ctx_keep]
    g3c = g3[ctx_keep]
    o3 = np.r_[0, np.cumsum(np.bincount(cid[keep], minlength=len(cstart))[ctx_keep])].astype("<u4")
    n2, n3, m3 = len(w2), int(keep.sum()), len(k3c)
    if max(n2, n3, m3) >= 1 << 32:
        raise ValueError("too many n-grams for the section (2^32 entries)")
    out = [struct.pack("<fIII", float(lam), m3, n2, n3),
           p1.astype("<f4").tobytes(), g2.astype("<f4").tobytes(), o2.tobytes(),
           _entries(w2, a2),
           k3c.astype("<u8").tobytes(), g3c.astype("<f4").tobytes(), o3.tobytes(),
           _entries(w3[keep], a3[keep])]
    return b"".join(out)


def with_lambda(section: bytes, lam: float) -> bytes:
    """The same section with the network's weight λ (0 <= λ <= 1)."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError("λ must be in [0, 1]")
    return struct.pack("<f", lam) + bytes(section[4:])


def section_lambda(section: bytes) -> float:
    return struct.unpack_from("<f", section)[0]


def attach(model: Model, section: bytes, metadata: dict | None = None) -> Model:
    """A copy of model with the KN section (replacing any it had)."""
    meta = dict(model.metadata)
    meta.update(metadata or {})
    return Model(model.config, model.params, model.ms, model.vocab, model.class_start, model.speller_prime,
                 meta, model.name, model.param_dtype, kn=section)


def bias_only_params(V: int, D: int, H: int, C: int, ids, case, gap, case_coded) -> np.ndarray:
    """The parameter block of a network that predicts nothing from its state (every weight 0) and codes
    each word's case and gap by its training frequencies: Bcase[w][k] = ln(n(w, k) + 0.5),
    Bgap[w][g] = ln(n(w, g) + 0.5).  The Kneser-Ney model type is this network with λ = 0."""
    from .reference import NAMES, split_params
    from ._model import param_count

    p = np.zeros(param_count(V, D, H, C), dtype=np.float32)
    t = dict(zip(NAMES, split_params(p, V, D, H, C)))
    ids = np.asarray(ids, dtype=np.int64)
    cc = np.asarray(case_coded, dtype=bool)
    nk = np.zeros((V, 4))
    np.add.at(nk, (ids[cc], np.asarray(case, dtype=np.int64)[cc]), 1)
    ng = np.zeros((V, 8))
    np.add.at(ng, (ids, np.asarray(gap, dtype=np.int64)), 1)
    t["Bc"][...] = np.log(nk + 0.5)
    t["Bg"][...] = np.log(ng + 0.5)
    return p


def choose_lambda(model: Model, dev_text: bytes, grid=(0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0), adapt=False):
    """(best λ, [(λ, coded bytes)]) by exact code length of dev_text with model's KN section at each λ."""
    from .train import word_model_coded

    rows = []
    for lam in grid:
        m = attach(model, with_lambda(model.kn, lam))
        rows.append((lam, word_model_coded(m, dev_text, adapt)[0]))
    best = min(rows, key=lambda r: (r[1], r[0]))
    return best[0], rows


def stream_ids(model: Model, table) -> np.ndarray:
    """The token ids of a TokenTable (_corpus) under model's vocabulary (<end> 1, out of vocabulary 0)."""
    from ._corpus import END_KEY

    index = {v: i for i, v in enumerate(model.vocab) if i >= 2}
    kmap = np.array([1 if k == END_KEY else index.get(k, 0) for k in table.keys], dtype=np.int32)
    return kmap[table.kidx]


def trainer_tokens(n_total: int, tokens: int, batch: int, bptt: int) -> np.ndarray:
    """Indices of the training stream that the trainer (train.py) reads with --tokens tokens, --batch and
    --bptt: the first steps·bptt tokens of each of its batch streams (all of them after an epoch), so a
    Kneser-Ney table counted over them has the network's budget."""
    n_stream = n_total // batch
    steps = max(1, tokens // (batch * bptt))
    span = min(steps * bptt, n_stream)
    return (np.arange(batch)[:, None] * n_stream + np.arange(span)[None]).reshape(-1)


def build_parser():
    import argparse

    ap = argparse.ArgumentParser(prog="python -m nlmcodec.kn", description=(
        "Count an interpolated Kneser-Ney trigram model on the training corpus and write it into a model file: "
        "beside a trained network (--network: the mixture, λ chosen on dev) or alone (the Kneser-Ney model type: "
        "a bias-only network codes case and gap, λ = 0)."))
    ap.add_argument("files", nargs="+", help="training files: .jsonl(.xz) shards, text files, or directories")
    ap.add_argument("-o", "--output", required=True, help="output model file (.nlmm)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--network", metavar="MODEL", help="the trained model to mix with (name or .nlmm path)")
    g.add_argument("--vocab", type=int, help="Kneser-Ney alone: vocabulary size (built as train.py builds it)")
    ap.add_argument("--classes", type=int, default=128, help="Kneser-Ney alone: classes")
    ap.add_argument("--tokens", type=int, required=True, help="training tokens (the network's budget)")
    ap.add_argument("--batch", type=int, default=128, help="the trainer's --batch (which tokens it read)")
    ap.add_argument("--bptt", type=int, default=32, help="the trainer's --bptt")
    ap.add_argument("--max-train-tokens", type=int, default=0, help="use only the first N training tokens "
                    "(as the trainer's option)")
    ap.add_argument("--min3", type=int, default=1, help="keep trigrams seen at least this often")
    ap.add_argument("--dev", action="append", default=[], help="dev file(s): λ is chosen on them")
    ap.add_argument("--dev-bytes", type=int, default=100_000)
    ap.add_argument("--lambdas", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
                    help="λ candidates (the network's weight), with --network")
    ap.add_argument("--cache-dir", default=None, help="token cache directory")
    ap.add_argument("--name", default="")
    ap.add_argument("--command", default=None, help="the command recorded in the metadata (default: argv)")
    return ap


def main(argv=None) -> int:
    import sys

    from ._registry import load_model
    from ._corpus import lexer_name
    from .train import (_tok_cache, build_vocab, dev_text, expand_inputs, sha256_file, sqrt_classes,
                        speller_prime_list)

    a = build_parser().parse_args(argv)
    paths = expand_inputs(a.files)
    table = _tok_cache(paths, a.cache_dir)
    if a.max_train_tokens:
        from ._corpus import TokenTable
        n = a.max_train_tokens
        table = TokenTable(table.keys, table.kidx[:n], table.case[:n], table.gap[:n], table.kind[:n])
    meta = {"command": a.command or " ".join(["python -m nlmcodec.kn"] + list(argv if argv is not None else sys.argv[1:])),
            "kn": {"tokens": int(a.tokens), "batch": a.batch, "bptt": a.bptt, "min3": a.min3, "max_train_tokens": a.max_train_tokens,
                   "train_files": [{"path": os.path.basename(p), "sha256": sha256_file(p)} for p in paths],
                   "lexer": lexer_name()}}
    if a.network:
        base = load_model(a.network)
        ids = stream_ids(base, table)
    else:
        V, C = a.vocab, min(a.classes, a.vocab)
        vocab, kmap, idc = build_vocab(table, V)
        ids = kmap[table.kidx].astype(np.int32)
    pick = trainer_tokens(len(ids), a.tokens, a.batch, a.bptt)
    sec = build_section(ids[pick], len(base.vocab) if a.network else V, 0.0, a.min3)
    meta["kn"]["tokens_counted"] = int(len(pick))
    if not a.network:
        D = H = 16
        cc = (table.kind == 1) & (table.case < 3)
        params = bias_only_params(V, D, H, C, ids[pick], table.case[pick], table.gap[pick], cc[pick])
        cfg = {"V": V, "D": D, "H": H, "C": C, "seg_len": 20, "lr": 0.0, "decay": 0.0, "eps": 1e-6}
        meta.update({"name": a.name or "kn", "arch": "kn", "kn_lambda": 0.0})
        model = Model(cfg, params, np.ones(14, np.float32), vocab, sqrt_classes(idc, C),
                      speller_prime_list(table, kmap), meta, name=a.name or "kn", param_dtype="float16", kn=sec)
    else:
        model = attach(base, sec, meta)
        if a.dev:
            grid = [float(x) for x in a.lambdas.split(",")]
            lam, rows = choose_lambda(model, dev_text(expand_inputs(a.dev), a.dev_bytes), grid)
            meta["kn_lambda"] = lam
            meta["kn_lambda_grid"] = [[x, n] for x, n in rows]
            print("λ on dev: " + "  ".join(f"{x:g}: {n:,}" for x, n in rows) + f"  -> {lam:g}", flush=True)
        else:
            lam = 0.5
            meta["kn_lambda"] = lam
        if a.name:
            meta["name"] = a.name
        model = attach(base, with_lambda(sec, lam), meta)
    model.save(a.output)
    print(f"{a.output}: {model.nbytes:,} bytes, Kneser-Ney section {len(sec):,} bytes "
          f"({len(pick):,} tokens counted)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
