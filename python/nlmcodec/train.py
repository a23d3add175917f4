"""Training: vocabulary, class map, word dropout, batched truncated BPTT with Adam, checkpoints, export.

    python -m nlmcodec.train FILE... -o model.nlmm [--vocab V --dim D --hidden H --classes C]
        [--tokens N | --epochs E] [--time-limit SEC] [--seed S] [--dev FILE] [--checkpoint-dir DIR] [--resume]

The shape and schedule options not given (--vocab, --classes, --dim, --hidden, --epochs, --lr, --warmup) come
from the recipe for the size of the training text (RECIPES; docs/decisions/train-recipe.md).

Files are plain text (one document each) or .jsonl(.xz) shards (one JSON document per line, "text").

Vocabulary (ids): 0 ``<unk>``, 1 ``<end>``, then the V-2 most frequent vocabulary keys of the training corpus
by count (ties by key bytes), most frequent first.  A key is the ASCII-lowercased body of a word of case 0..2,
a number or a symbol; case-3 (verbatim) words are never in the vocabulary (they contain an ASCII capital; keys
never do).  Classes: Mikolov's √-frequency binning of ids 0..V-1 in id order into C contiguous non-empty
classes (the counts of ids 0 and 1 are the training counts of OOV tokens and of END tokens).

Word dropout (TECHNIQUE §4.4): each epoch, every in-vocabulary token w is replaced by ``<unk>`` (as input
and target) with probability α/(α+count(w)), α = 0.25, from a generator seeded by (seed, epoch).

Determinism: every random draw comes from numpy Generators seeded by (--seed, purpose[, epoch]); the model
file metadata holds no wall times.  The same command and seed on the same machine give the same model file,
provided --time-limit does not cut the run (the learning-rate schedule depends on --tokens only).

ms (the per-tensor RMS gradient stored in the model, used by dynamic evaluation, docs/format.md §6): with the
final weights, over S segments of seg_len training tokens (one stream each, the state carried from the 64
tokens before the segment), g = gradient of the segment's summed loss;
ms_t = sqrt(mean over segments of mean over elements of g_t²), where for the row-sparse tensors
E, Wo, bo, Bc, Bg the inner mean runs over the rows the segment touched only.  Computed in float64.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from . import reference as R
from ._corpus import END_KEY, TokenTable, iter_documents, lexer_name
from ._model import Model

ALPHA = 0.25
SPARSE_TENSORS = ("E", "Wo", "bo", "Bc", "Bg")
DEFAULT_DYN = {"seg_len": 20, "lr": 1e-3, "decay": 5e-4, "eps": 1e-6}


# ----------------------------------------------------------------------------------------------- vocab
def _has_upper(k: bytes) -> bool:
    return any(65 <= c <= 90 for c in k)


def build_vocab(table: TokenTable, V: int):
    """(vocab list[bytes], key->id map array over table.keys, counts per id (int64))."""
    counts = table.key_counts()
    end_i = None
    cand = []
    for i, k in enumerate(table.keys):
        if k == END_KEY:
            end_i = i
            continue
        if not k or len(k) > 32 or _has_upper(k):
            continue
        cand.append(i)
    cand = np.array(cand, dtype=np.int64)
    # sort by count desc, ties by key bytes
    cand = cand[counts[cand] > 0]
    keyorder = sorted(cand.tolist(), key=lambda i: (-int(counts[i]), table.keys[i]))
    chosen = keyorder[: V - 2]
    if len(chosen) < V - 2:
        raise ValueError(f"the training corpus has only {len(chosen) + 2} vocabulary keys, fewer than --vocab {V}")
    kmap = np.zeros(len(table.keys), dtype=np.int32)
    for j, i in enumerate(chosen):
        kmap[i] = j + 2
    if end_i is not None:
        kmap[end_i] = 1
    vocab = [b"", b""] + [table.keys[i] for i in chosen]
    idc = np.bincount(kmap[table.kidx], minlength=V).astype(np.int64)
    return vocab, kmap, idc


def sqrt_classes(counts: np.ndarray, C: int) -> np.ndarray:
    """class_start (C+1) by √-frequency binning of ids in order (Mikolov 2011), no empty class."""
    V = len(counts)
    s = np.sqrt(np.maximum(counts, 1).astype(np.float64))
    cum_before = np.concatenate([[0.0], np.cumsum(s)[:-1]])
    total = s.sum()
    b = np.searchsorted(cum_before, np.arange(C) * total / C, side="left").astype(np.int64)
    b[0] = 0
    for k in range(1, C):
        b[k] = min(max(b[k], b[k - 1] + 1), V - (C - k))
    return np.concatenate([b, [V]]).astype(np.int32)


def speller_prime_list(table: TokenTable, kmap: np.ndarray, cap_bytes: int = 256 << 10) -> bytes:
    """Distinct OOV spellings (as the codec spells them), most frequent first, '\\n'-separated, capped."""
    counts = table.key_counts()
    oov = [i for i, k in enumerate(table.keys) if kmap[i] == 0 and k != END_KEY and counts[i] > 0]
    oov.sort(key=lambda i: (-int(counts[i]), table.keys[i]))
    out, n = [], 0
    for i in oov:
        k = table.keys[i]
        if n + len(k) + 1 > cap_bytes:
            break
        out.append(k)
        n += len(k) + 1
    return b"\n".join(out)


# ----------------------------------------------------------------------------------------------- data
class Stream:
    """Token arrays in vocabulary ids."""

    def __init__(self, table: TokenTable, kmap: np.ndarray):
        self.w = kmap[table.kidx].astype(np.int32)
        self.case = table.case.astype(np.int8)
        self.gap = table.gap.astype(np.int8)
        self.cc = (table.kind == 1) & (table.case < 3)

    def __len__(self):
        return len(self.w)

    def slice(self, a, b):
        s = Stream.__new__(Stream)
        s.w, s.case, s.gap, s.cc = self.w[a:b], self.case[a:b], self.gap[a:b], self.cc[a:b]
        return s


def dev_slice(stream: Stream, n_tokens: int, n_chunks: int = 16):
    """A fixed dev evaluation set: n_chunks evenly spaced chunks, as (B, L) arrays."""
    L = n_tokens // n_chunks
    N = len(stream)
    if N < n_tokens:
        L = N // n_chunks
    starts = (np.arange(n_chunks) * (N - L) // max(n_chunks - 1, 1)).astype(np.int64)
    idx = starts[:, None] + np.arange(L)[None]
    return stream.w[idx], stream.case[idx], stream.gap[idx], stream.cc[idx]


def evaluate(model: R.Model, params, dev, T: int = 64):
    w, k, g, cc = dev
    B, L = w.shape
    h = np.zeros((B, model.state_size), dtype=params.dtype)
    tot = {"class": 0.0, "word": 0.0, "case": 0.0, "gap": 0.0, "tokens": 0, "unk": 0}
    for a in range(0, L, T):
        b = min(L, a + T)
        _, _, h, parts = R.forward_backward(model, params, w[:, a:b], k[:, a:b], g[:, a:b], cc[:, a:b], h,
                                            need_grad=False, return_parts=True)
        for key in tot:
            tot[key] += float(parts[key])
    n = tot["tokens"]
    res = {key: tot[key] / n for key in ("class", "word", "case", "gap")}
    res["nats_per_token"] = sum(res[key] for key in ("class", "word", "case", "gap"))
    res["unk_rate"] = tot["unk"] / n
    res["tokens"] = n
    return res


def compute_ms(model: R.Model, params, stream: Stream, seed: int, seg_len: int = 20, n_segments: int = 200,
               warm: int = 64):
    """Per-tensor RMS gradient (see the module docstring), float64."""
    rng = np.random.default_rng([seed, 7])
    p64 = params.astype(np.float64)
    N = len(stream)
    acc = np.zeros(len(R.NAMES))
    if N < seg_len + 2:
        return np.ones(len(R.NAMES), dtype=np.float32)       # corpus too small to measure: neutral
    warm = min(warm, (N - seg_len - 2) // 2)
    starts = np.sort(rng.integers(warm, N - seg_len - 1, n_segments))
    for s in starts:
        a = s - warm
        _, _, h = R.forward_backward(model, p64, stream.w[a:s], stream.case[a:s], stream.gap[a:s],
                                     stream.cc[a:s], None, need_grad=False)
        b = s + seg_len
        _, g, _ = R.forward_backward(model, p64, stream.w[s:b], stream.case[s:b], stream.gap[s:b],
                                     stream.cc[s:b], h)
        for i, (name, t) in enumerate(zip(R.NAMES, model.split(g))):
            if name in SPARSE_TENSORS:
                t2 = t.reshape(t.shape[0], -1)
                rows = np.any(t2 != 0, axis=1)
                acc[i] += float(np.mean(t2[rows] ** 2)) if rows.any() else 0.0
            else:
                acc[i] += float(np.mean(t ** 2))
    return np.sqrt(acc / len(starts)).astype(np.float32)


# ----------------------------------------------------------------------------------------------- utils
def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for blk in iter(lambda: f.read(1 << 20), b""):
            h.update(blk)
    return h.hexdigest()


def expand_inputs(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(glob.glob(os.path.join(p, "*.jsonl.xz")) + glob.glob(os.path.join(p, "*.txt")))
        else:
            out.append(p)
    return out


class Progress:
    def __init__(self, total, desc="", enabled=True, initial=0):
        self.total, self.desc, self.t0, self.last = total, desc, time.time(), 0.0
        self.enabled = enabled
        self.bar = None
        self.n = 0
        if not enabled:
            return
        try:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=desc, unit="tok", unit_scale=True, mininterval=5, initial=initial)
        except Exception:
            self.bar = None
        self.n = initial

    def update(self, n, info=""):
        self.n += n
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(n)
            if info:
                self.bar.set_postfix_str(info, refresh=False)
            return
        now = time.time()
        if now - self.last >= 30 or self.n >= self.total:
            self.last = now
            el = now - self.t0
            rate = self.n / max(el, 1e-9)
            print(f"[{self.desc}] {self.n / 1e6:.2f}M/{self.total / 1e6:.2f}M tok  {rate:,.0f} tok/s  "
                  f"{el / 60:.1f} min  {info}", flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ----------------------------------------------------------------------------------------------- recipe
# The defaults of the shape and schedule options, by the size of the training text (UTF-8 bytes of its
# documents): measured by benchmarks/train_recipe.py, docs/decisions/train-recipe.md.  An option given on the
# command line wins over its recipe value.  (up to bytes or None, name, option values)
RECIPES = (
    (1_000_000, "small", {"vocab": 4096, "classes": 64, "dim": 128, "hidden": 128, "epochs": 8.0,
                          "lr": 6e-3, "warmup": 50}),
    (10_000_000, "medium", {"vocab": 8192, "classes": 128, "dim": 128, "hidden": 256, "epochs": 3.0,
                            "lr": 6e-3, "warmup": 100}),
    (None, "large", {"vocab": 16384, "classes": 128, "dim": 128, "hidden": 256, "epochs": 1.0,
                     "lr": 3e-3, "warmup": 200}),
)
RECIPE_OPTIONS = ("vocab", "classes", "dim", "hidden", "epochs", "lr", "warmup")


def _mb(n):
    return f"{n / 1e6:g} MB"


def recipe_for(text_bytes: int):
    """(name, {option: value}) of the recipe for a training text of text_bytes bytes."""
    for limit, name, values in RECIPES:
        if limit is None or text_bytes <= limit:
            return name, dict(values)
    raise AssertionError("the last recipe has no limit")


def recipe_lines():
    """One line per recipe: its sizes and its option values (for --help and the decision record)."""
    lines, low = [], 0
    for limit, _, v in RECIPES:
        size = f"up to {_mb(limit)}:" if limit else f"over {_mb(low)}:"
        lines.append(f"{size:<14}--vocab {v['vocab']} --classes {v['classes']} --dim {v['dim']} "
                     f"--hidden {v['hidden']} --epochs {v['epochs']:g} --lr {v['lr']:g} --warmup {v['warmup']}")
        low = limit
    return lines


def training_text_bytes(paths) -> int:
    """Bytes of text in the training files: a text file's size, the UTF-8 text of a .jsonl(.xz) file's
    documents (read once more; a plain file is not read)."""
    n = 0
    for p in paths:
        p = str(p)
        if p.endswith(".jsonl") or p.endswith(".jsonl.xz"):
            n += sum(len(d) for d in iter_documents([p]))
        else:
            n += os.path.getsize(p)
    return n


def apply_recipe(args, text_bytes: int, log=print):
    """Fill the shape and schedule options the user did not give (None) from the recipe for text_bytes;
    --tokens given means no --epochs.  Returns the recipe's name; args.recipe is it when it set an option."""
    name, values = recipe_for(text_bytes)
    if getattr(args, "tokens", None):
        values.pop("epochs")
    used = {k: v for k, v in values.items() if getattr(args, k, None) is None}
    for k, v in used.items():
        setattr(args, k, v)
    if getattr(args, "tokens", None) is None:
        args.tokens = 0
    args.recipe = name if used else None
    if used:
        log(f"training text {_mb(round(text_bytes, -3))}: the {name} recipe sets "
            + " ".join(f"--{k} {v:g}" if isinstance(v, float) else f"--{k} {v}" for k, v in used.items())
            + " (an option given wins)")
    return name


# ----------------------------------------------------------------------------------------------- train
def _tok_cache(paths, cache_dir):
    """Tokenise (cached in cache_dir keyed by the files' SHA-256 and the lexer)."""
    if cache_dir is None:
        return TokenTable.from_files(paths)
    h = hashlib.sha256(lexer_name().encode())
    for p in paths:
        h.update(sha256_file(p).encode())
    f = Path(cache_dir) / f"tokens-{h.hexdigest()[:16]}.npz"
    if f.exists():
        return TokenTable.load(f)
    t = TokenTable.from_files(paths)
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    t.save(f)
    return t


def train(args) -> Model:
    t_start = time.time()
    paths = expand_inputs(args.files)
    dev_paths = expand_inputs(args.dev) if args.dev else []
    ck = Path(args.checkpoint_dir) if args.checkpoint_dir else None
    if ck:
        ck.mkdir(parents=True, exist_ok=True)
    cache = args.cache_dir or (str(ck) if ck else None)
    log = (lambda *a: print(*a, flush=True)) if not args.quiet else (lambda *a: None)

    log(f"tokenising {len(paths)} file(s) (lexer: {lexer_name()})")
    table = _tok_cache(paths, cache)
    n_all = len(table)
    if args.max_train_tokens:
        table = TokenTable(table.keys, table.kidx[: args.max_train_tokens], table.case[: args.max_train_tokens],
                           table.gap[: args.max_train_tokens], table.kind[: args.max_train_tokens])
    if any(getattr(args, k, None) is None for k in RECIPE_OPTIONS):
        text_bytes = training_text_bytes(paths)
        if len(table) < n_all:             # --max-train-tokens: the share of the text those tokens are
            text_bytes = text_bytes * len(table) // max(n_all, 1)
        apply_recipe(args, text_bytes, log)
    else:
        args.recipe = None
    V, D, H, C = args.vocab, args.dim, args.hidden, args.classes
    n_keys = 2 + sum(1 for k in set(table.keys[i] for i in np.unique(table.kidx))
                     if k != END_KEY and k and len(k) <= 32 and not _has_upper(k))
    if V > n_keys:
        log(f"warning: the corpus has only {n_keys - 2} distinct vocabulary keys; --vocab reduced from {V} to {n_keys}")
        V = n_keys
    if C > V:
        log(f"warning: --classes reduced from {C} to the vocabulary size {V}")
        C = V
    vocab, kmap, idc = build_vocab(table, V)
    class_start = sqrt_classes(idc, C)
    prime = speller_prime_list(table, kmap, args.prime_bytes)
    train_s = Stream(table, kmap)
    log(f"train tokens {len(train_s):,}  OOV rate {np.mean(train_s.w == 0):.4f}  classes max size "
        f"{int(np.diff(class_start).max())}")
    key_index = {k: i for i, k in enumerate(table.keys)}
    dev = None
    if dev_paths:
        dt_ = TokenTable.from_files(dev_paths, processes=1, key_index=key_index)
        dkmap = np.zeros(len(dt_.keys), dtype=np.int32)
        dkmap[: len(kmap)] = kmap
        dev_s = Stream(dt_, dkmap)
        dev = dev_slice(dev_s, args.dev_tokens)
        log(f"dev tokens {len(dev_s):,}  eval slice {dev[0].size:,}  unk rate {np.mean(dev_s.w == 0):.4f}")

    model = R.Model(V, D, H, C, class_start, arch=args.arch, context=args.context)
    rng0 = np.random.default_rng([args.seed, 1])
    params = R.init_params(V, D, H, C, rng0, dtype=np.float32, arch=args.arch, forget_bias=args.forget_bias,
                           context=args.context)
    init_meta = {}
    if args.init:
        # warm start: the weights of an earlier model of the same shape, vocabulary and classes (its float16
        # values); the optimiser moments start from zero and the schedule is this run's own
        m0 = Model.load(args.init)
        c0 = m0.config
        if (c0["V"], c0["D"], c0["H"], c0["C"], c0["arch"], c0.get("context", args.context)) != \
                (V, D, H, C, args.arch, args.context) or m0.vocab != vocab or \
                not np.array_equal(m0.class_start, class_start):
            raise SystemExit(f"--init: {args.init} does not have this run's vocabulary, classes and shape")
        params = m0.params.astype(np.float32).copy()
        init_meta = {"init_model_id": m0.model_id.hex(), "init_model_name": m0.name,
                     "init_tokens_trained": int(m0.metadata.get("tokens_trained", 0))}
    m1 = np.zeros_like(params)
    m2 = np.zeros_like(params)
    B, T = args.batch, args.bptt
    if len(train_s) < B * T:                   # tiny corpus: fewer/shorter streams
        B = max(1, min(B, len(train_s) // T))
        T = max(1, min(T, len(train_s) // B))
        log(f"warning: small corpus; batch {B}, bptt {T}")
    n_stream = len(train_s) // B
    steps_per_epoch = n_stream // T
    total_tokens = args.tokens if args.tokens else int(args.epochs * steps_per_epoch * B * T)
    total_steps = max(1, total_tokens // (B * T))
    step = 0
    h = np.zeros((B, model.state_size), dtype=np.float32)
    best = {"nats_per_token": float("inf"), "step": -1}
    curve = []
    if ck and args.resume and (ck / "last.npz").exists():
        z = np.load(ck / "last.npz")
        if z["params"].shape != params.shape:
            raise SystemExit(f"--resume: the checkpoint in {ck} does not match --vocab/--dim/--hidden/--classes")
        params, m1, m2, h = z["params"], z["m1"], z["m2"], z["h"]
        step = int(z["step"])
        if "elapsed" in z.files:
            t_start -= float(z["elapsed"])      # --time-limit counts the whole run across resumes
        best = json.loads(str(z["best"]))
        curve = json.loads(str(z["curve"]))
        log(f"resumed from step {step}")

    counts_f = idc.astype(np.float64)
    keep_p = (counts_f / (ALPHA + counts_f)).astype(np.float32)
    keep_p[:2] = 1.0
    pw_epoch, w_drop = -1, None
    b1, b2, aeps = 0.9, 0.999, 1e-8
    meta_base = {
        "name": args.name,
        "command": args.command_line,
        "train_files": [{"path": os.path.basename(p), "sha256": sha256_file(p)} for p in paths],
        "dev_files": [{"path": os.path.basename(p), "sha256": sha256_file(p)} for p in dev_paths],
        "seed": args.seed, "batch": B, "bptt": T, "adam_lr": args.lr, "clip": args.clip,
        **({"recipe": args.recipe} if args.recipe else {}),
        "word_dropout_alpha": ALPHA, "lexer": lexer_name(), "train_tokens_corpus": int(len(train_s)),
        "vocab_rule": "ids 0 <unk>, 1 <end>, then top keys by training count (ties by bytes)",
        "class_rule": "sqrt-frequency binning, contiguous",
        "ms_rule": "RMS of per-segment summed-loss gradient; row-sparse tensors over touched rows",
    }
    if args.arch != "elman":        # an Elman model's metadata (so its file) is what it was before model types
        meta_base.update({"arch": args.arch, **({"forget_bias": args.forget_bias} if args.arch == "lstm" else {}),
                          **({"context": args.context} if args.arch == "nplm" else {})})
    meta_base.update(init_meta)

    def export(path, p, dev_res):
        ms = compute_ms(model, p, train_s, args.seed, DEFAULT_DYN["seg_len"], args.ms_segments)
        meta = dict(meta_base)
        meta.update({"steps": int(step), "tokens_trained": int(step * B * T),
                     "dev": dev_res, "param_storage": "float16"})
        cfg = {"V": V, "D": D, "H": H, "C": C, **DEFAULT_DYN, "arch": args.arch}
        if args.arch == "nplm":
            cfg["context"] = args.context
        m = Model(cfg, p, ms, vocab, class_start, prime, meta, name=args.name, param_dtype="float16")
        m.save(path)
        return m

    def checkpoint():
        if not ck:
            return
        tmpf = ck / "last.tmp.npz"
        np.savez(tmpf, params=params, m1=m1, m2=m2, h=h, step=step, best=json.dumps(best), curve=json.dumps(curve),
                 elapsed=time.time() - t_start)
        os.replace(tmpf, ck / "last.npz")
        with open(ck / "dev_curve.csv", "w") as f:
            f.write("step,tokens,nats_per_token,class,word,case,gap,unk_rate,train_loss,elapsed_s\n")
            for r in curve:
                f.write(",".join(str(r[k]) for k in ("step", "tokens", "nats_per_token", "class", "word", "case",
                                                     "gap", "unk_rate", "train_loss", "elapsed_s")) + "\n")

    prog = Progress(total_steps * B * T, args.name or "train", enabled=not args.quiet, initial=step * B * T)
    t_last_ck = time.time()
    run_loss, run_n = 0.0, 0
    stopped_by_time = False
    tmp = gbuf = None
    while step < total_steps:
        epoch, pos = divmod(step, steps_per_epoch)
        if epoch != pw_epoch:
            r = np.random.default_rng([args.seed, 2, epoch])
            drop = r.random(len(train_s), dtype=np.float32) >= keep_p[train_s.w]
            w_drop = np.where(drop, 0, train_s.w).astype(np.int32)
            pw_epoch = epoch
            if pos == 0:
                h[:] = 0
        base = np.arange(B) * n_stream + pos * T
        idx = base[:, None] + np.arange(T)[None]
        # learning rate: linear warm-up, cosine to 10 %
        warm = min(1.0, (step + 1) / args.warmup)
        frac = step / total_steps
        lr = args.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        if gbuf is None:
            gbuf = np.empty_like(params)
        loss, g, h = R.forward_backward(model, params, w_drop[idx], train_s.case[idx], train_s.gap[idx],
                                        train_s.cc[idx], h, grad_out=gbuf)
        g /= (B * T)
        gn = float(np.sqrt(np.dot(g, g)))
        if gn > args.clip:
            g *= args.clip / gn
        step += 1
        c1 = 1 - b1 ** step
        c2 = 1 - b2 ** step
        if tmp is None:
            tmp = np.empty_like(params)
        m1 *= b1; np.multiply(g, 1 - b1, out=tmp); m1 += tmp             # in place: no 40 MB temporaries
        m2 *= b2; np.multiply(g, g, out=tmp); tmp *= (1 - b2); m2 += tmp
        np.multiply(m2, 1.0 / c2, out=tmp); np.sqrt(tmp, out=tmp); tmp += aeps
        np.divide(m1, tmp, out=tmp); tmp *= (lr / c1)
        params -= tmp
        run_loss += float(loss); run_n += B * T
        prog.update(B * T, f"loss {run_loss / max(run_n, 1):.3f} lr {lr:.2e}")
        timed_out = bool(args.time_limit and (time.time() - t_start) > args.time_limit) or \
            bool(args.max_steps_for_test and step >= args.max_steps_for_test)
        last = step >= total_steps or timed_out
        if (time.time() - t_last_ck) > args.checkpoint_every or last or (args.eval_every and step % args.eval_every == 0):
            t_last_ck = time.time()
            if dev is not None:
                res = evaluate(model, params, dev)
                res.update({"step": step, "tokens": step * B * T, "train_loss": run_loss / max(run_n, 1),
                            "elapsed_s": round(time.time() - t_start, 1)})
                curve.append(res)
                log(f"step {step} tokens {step * B * T:,} dev {res['nats_per_token']:.4f} nats/token "
                    f"(class {res['class']:.3f} word {res['word']:.3f} case {res['case']:.3f} gap {res['gap']:.3f}) "
                    f"train {run_loss / max(run_n, 1):.4f}")
                if res["nats_per_token"] < best["nats_per_token"]:
                    best = {"nats_per_token": res["nats_per_token"], "step": step}
                    if ck:
                        np.save(ck / "best_params.npy", params)
                        dres = {k: round(float(v), 5) for k, v in res.items() if k != "elapsed_s"}
                        export(ck / "best.nlmm", params, dres)
            run_loss, run_n = 0.0, 0
            checkpoint()
        if timed_out:
            stopped_by_time = True
            log("time limit reached")
            break
    prog.close()
    final = params
    dev_res = curve[-1] if curve else None
    if dev is not None and ck and (ck / "best_params.npy").exists():
        final = np.load(ck / "best_params.npy")
        dev_res = next(r for r in curve if r["step"] == best["step"])
    dres = None if dev_res is None else {k: round(float(v), 5) for k, v in dev_res.items() if k != "elapsed_s"}
    step_final = step
    step = best["step"] if best["step"] >= 0 else step
    m = export(args.output, final, dres) if args.output else None
    step = step_final
    if ck:
        with open(ck / "run.json", "w") as f:
            json.dump({"stopped_by_time": stopped_by_time, "elapsed_s": time.time() - t_start, "best": best,
                       "steps": step, "output": args.output}, f, indent=1)
    return m


# ----------------------------------------------------------------------------------------------- dyn-eval tuning
def tune_dynamic(model: Model, dev_text: bytes, lrs=(3e-4, 1e-3, 3e-3), decays=(0.0, 1e-4, 5e-4, 2e-3),
                 seg_lens=(20,), eps=None, size=None, log=print):
    """Grid search of the dynamic-evaluation config on dev text by compressed size.

    size(data, model) -> bytes it codes to; default: len(nlmcodec.compress(data, model=model, adapt=True)).
    Returns (best Model with the chosen config, list of (size, seg_len, lr, decay, eps))."""
    if size is None:
        import nlmcodec

        def size(data, m):
            return len(nlmcodec.compress(data, model=m, adapt=True))
    eps = model.config["eps"] if eps is None else eps
    results = []
    for L in seg_lens:
        for lr in lrs:
            for dc in decays:
                m = model.with_config(seg_len=int(L), lr=float(lr), decay=float(dc), eps=float(eps))
                n = size(dev_text, m)
                results.append((n, L, lr, dc, eps))
                log(f"seg_len {L} lr {lr:g} decay {dc:g}: {n} bytes")
    results.sort()
    n, L, lr, dc, e = results[0]
    return model.with_config(seg_len=int(L), lr=float(lr), decay=float(dc), eps=float(e)), results


def dev_eval(model: Model, dev_paths, n_tokens: int = 200_000) -> dict:
    """Dev nats/token (and its class/word/case/gap parts, unk rate) of a model on the same fixed dev slice
    training uses (n_tokens in 16 evenly spaced chunks; OOV -> <unk>, no dropout)."""
    dev_paths = expand_inputs(dev_paths)
    t = TokenTable.from_files(dev_paths, processes=1)
    idx = {v: i for i, v in enumerate(model.vocab) if i >= 2}
    kmap = np.array([1 if k == END_KEY else idx.get(k, 0) for k in t.keys], dtype=np.int32)
    c = model.config
    rm = R.Model(c["V"], c["D"], c["H"], c["C"], model.class_start, arch=c["arch"], context=c.get("context", 3))
    return evaluate(rm, model.params, dev_slice(Stream(t, kmap), n_tokens))


# ----------------------------------------------------------------------------------------------- bundling
def bundle_model(checkpoint_dir, models_dir, name="default", command=None, model_file="best.nlmm"):
    """Copy checkpoint_dir/model_file to models_dir/<name>.nlmm and write <name>.json (manifest: command,
    corpus SHA-256s, dev figures, training time) and <name>_dev_curve.csv beside it.  Returns the manifest."""
    import shutil
    ck, md = Path(checkpoint_dir), Path(models_dir)
    m = Model.load(ck / model_file)
    dst = md / f"{name}.nlmm"
    shutil.copyfile(ck / model_file, dst)
    if (ck / "dev_curve.csv").exists():
        shutil.copyfile(ck / "dev_curve.csv", md / f"{name}_dev_curve.csv")
    curve = (ck / "dev_curve.csv").read_text().splitlines() if (ck / "dev_curve.csv").exists() else []
    elapsed = float(curve[-1].split(",")[-1]) if len(curve) > 1 else None
    run = json.loads((ck / "run.json").read_text()) if (ck / "run.json").exists() else {}
    c = m.config
    man = {
        "model": dst.name, "model_id_sha256": m.model_id.hex(), "size_bytes": dst.stat().st_size,
        "config": c, "param_storage": m.param_dtype,
        "command": command or m.metadata.get("command"),
        "train_files": m.metadata.get("train_files"), "dev_files": m.metadata.get("dev_files"),
        "seed": m.metadata.get("seed"), "lexer": m.metadata.get("lexer"),
        "steps": m.metadata.get("steps"), "tokens_trained": m.metadata.get("tokens_trained"),
        "dev_at_chosen_checkpoint": m.metadata.get("dev"),
        "training_wall_time_s_at_last_eval": elapsed, "run": run,
        "dev_curve": f"{name}_dev_curve.csv",
        "notes": "dynamic-evaluation config (seg_len, lr, decay, eps) are training defaults until tuned on dev",
    }
    (md / f"{name}.json").write_text(json.dumps(man, indent=1) + "\n")
    return man


# ----------------------------------------------------------------------------------------------- CLI
class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written; "(default: X)" after each option whose help does not say its default."""

    def _get_help_string(self, action):
        h = action.help or ""
        if (not action.option_strings or "default" in h or action.default is None or action.default is False
                or action.default == [] or action.default is argparse.SUPPRESS or h is argparse.SUPPRESS):
            return h
        return f"{h} (default: %(default)s)" if h else "(default: %(default)s)"


def _description():
    return ("Train an nlmcodec model on your own text.  It pays when the text is unlike the bundled model's "
            "English\n(another language, a technical field): 800 KB of German text trained with the defaults "
            "codes held-out\nGerman 18.6% smaller (docs/decisions/train-recipe.md).  Then compress with "
            "-m MODEL.nlmm, and put\nthe model in a directory of NLMCODEC_MODEL_PATH so that -d and -l find it "
            "by itself.\n\n"
            "Defaults by the size of the training text (the recipe; an option given wins):\n"
            + "\n".join("  " + line for line in recipe_lines()))


def build_parser():
    ap = argparse.ArgumentParser(prog="nlmcodec --train", description=_description(), formatter_class=_HelpFormatter)
    ap.add_argument("files", nargs="+", help="training files: text files or .jsonl(.xz) shards, or directories")
    ap.add_argument("-o", "--output", required=True, help="output model file (.nlmm)")
    s = ap.add_argument_group("model shape and schedule (default: by the recipe above)")
    s.add_argument("--vocab", type=int, default=None, help="vocabulary size (default: by the recipe)")
    s.add_argument("--classes", type=int, default=None, help="word classes (default: by the recipe)")
    s.add_argument("--dim", type=int, default=None, help="embedding size, a multiple of 16 (default: by the recipe)")
    s.add_argument("--hidden", type=int, default=None,
                   help="hidden state size, a multiple of 16 (default: by the recipe)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--epochs", type=float, default=None,
                   help="passes over the training text (default: by the recipe)")
    g.add_argument("--tokens", type=int, default=None,
                   help="training tokens instead of --epochs; they set the learning-rate schedule "
                        "(default: none, --epochs decides)")
    s.add_argument("--lr", type=float, default=None, help="Adam's peak learning rate (default: by the recipe)")
    s.add_argument("--warmup", type=int, default=None,
                   help="steps of linear learning-rate warm-up (default: by the recipe)")
    s.add_argument("--arch", choices=sorted(R.ARCHS), default="elman",
                   help="model type (docs/format.md §2.4): elman, lstm or nplm")
    s.add_argument("--context", type=int, default=R.NPLM_CONTEXT,
                   help="nplm: the previous tokens it reads (n − 1 of an n-gram; 2..16)")
    s.add_argument("--forget-bias", type=float, default=2.0,
                   help="lstm: initial bias of the forget gate (how far back the cell remembers at the start); "
                        "the lowest dev loss of docs/decisions/forget-bias.md")
    s.add_argument("--batch", type=int, default=64, help="streams trained side by side")
    s.add_argument("--bptt", type=int, default=32, help="tokens per truncated back-propagation step")
    s.add_argument("--clip", type=float, default=1.0, help="gradient norm clip")
    s.add_argument("--seed", type=int, default=1, help="seed of every random draw (same seed, same model)")
    r = ap.add_argument_group("run")
    r.add_argument("--time-limit", type=float, default=0, metavar="SEC",
                   help="stop after SEC seconds and keep the best so far (default: 0, no limit)")
    r.add_argument("--dev", action="append", default=[], metavar="FILE",
                   help="held-out file(s): the checkpoint with the lowest dev loss is kept, and dynamic "
                        "evaluation is tuned on them (default: none; the last weights are kept)")
    r.add_argument("--dev-tokens", type=int, default=200_000, help="dev tokens evaluated at each checkpoint")
    r.add_argument("--checkpoint-dir", default=None, metavar="DIR",
                   help="where checkpoints go, for --resume (default: none)")
    r.add_argument("--checkpoint-every", type=float, default=300, metavar="SEC",
                   help="seconds between dev evaluations and checkpoints")
    r.add_argument("--eval-every", type=int, default=0, metavar="N",
                   help="also evaluate every N steps, deterministic (default: 0, never)")
    r.add_argument("--resume", action="store_true", help="continue the run in --checkpoint-dir")
    r.add_argument("--init", default=None, metavar="MODEL",
                   help="start from the weights of MODEL (same --vocab/--dim/--hidden/--classes and corpus; "
                        "default: random weights)")
    r.add_argument("--cache-dir", default=None, help="token cache directory (default: the checkpoint dir)")
    r.add_argument("--ms-segments", type=int, default=200,
                   help="segments the stored RMS gradients are measured on")
    r.add_argument("--prime-bytes", type=int, default=256 << 10,
                   help="bytes of out-of-vocabulary spellings stored to prime the speller")
    r.add_argument("--max-train-tokens", type=int, default=0, metavar="N",
                   help="use only the first N training tokens (default: 0, all)")
    r.add_argument("--max-steps-for-test", type=int, default=0, help=argparse.SUPPRESS)
    r.add_argument("--name", default="", help="the name stored in the model (default: the output file's name)")
    r.add_argument("--tune-dynamic", dest="tune_dynamic", action="store_true", default=True,
                   help="after training, tune the dynamic-evaluation settings on the dev text (default with --dev)")
    r.add_argument("--no-tune-dynamic", dest="tune_dynamic", action="store_false",
                   help="keep the default dynamic-evaluation settings")
    r.add_argument("--tune-bytes", type=int, default=100_000, help="dev bytes used for the tuning")
    r.add_argument("--quiet", action="store_true", help="no progress or log lines")
    return ap


def parse_args(argv, ap=None):
    """The training options of argv (ap: the parser, default build_parser(); bad values go to ap.error)."""
    argv = list(argv)
    ap = ap or build_parser()
    args = ap.parse_args(argv)
    for name in ("dim", "hidden"):
        v = getattr(args, name)
        if v is not None and (v < 16 or v % 16):
            ap.error(f"--{name} must be a positive multiple of 16 (docs/format.md §2)")
    if (args.vocab is not None and args.vocab < 2) or (args.classes is not None and args.classes < 1):
        ap.error("--vocab must be >= 2 and --classes >= 1")
    args.command_line = " ".join(["nlmcodec", "--train"] + [a for a in argv])
    if not args.name:
        args.name = Path(args.output).stem
    return args


def run(args) -> int:
    """Train with parsed options (parse_args), then tune dynamic evaluation on --dev."""
    model = train(args)
    if model is not None and args.output and args.dev and args.tune_dynamic:
        tune_and_store(model, expand_inputs(args.dev), args.output, args.tune_bytes,
                       log=(lambda *a: None) if args.quiet else print)
    return 0


def main(argv=None) -> int:
    return run(parse_args(sys.argv[1:] if argv is None else argv))


def word_model_coded(model: Model, text: bytes, adapt: bool):
    """(payload bytes, tokens) of text coded by the word model as one group, in the blocks the encoder cuts
    (_encode._model_pieces: 64 KiB, each within the token bound of docs/format.md §3.5), the codec's state
    carried from block to block as in a frame."""
    from ._core import Codec
    from ._encode import _model_pieces

    c = Codec(model, adapt)
    n = 0
    for pos, k in _model_pieces(text):
        n += len(c.encode_block(text[pos:pos + k]))
    return n, int(c.stats()["tokens"])          # the codec's counts run over the group


def dev_text(dev_paths, nbytes: int) -> bytes:
    """The first nbytes of the dev documents, joined: the text dynamic evaluation and λ are tuned on."""
    text = bytearray()
    for doc in iter_documents(dev_paths):
        text += doc
        if len(text) >= nbytes:
            break
    return bytes(text[:nbytes])


def tune_and_store(model: Model, dev_paths, output, nbytes=100_000, log=print):
    """Tune seg_len, lr and decay of dynamic evaluation on the first nbytes of the dev documents (by the
    word model's coded size) and rewrite the model file with the best setting."""
    text = dev_text(dev_paths, nbytes)
    best, results = tune_dynamic(model, text, lrs=(5e-4, 1e-3, 2e-3), decays=(0.0, 1e-4, 1e-3), seg_lens=(10, 20),
                                 size=lambda d, m: word_model_coded(m, d, True)[0], log=log)
    meta = dict(best.metadata)
    meta["dynamic_tuning"] = {"dev_bytes": len(text), "grid": [list(r) for r in results]}
    best = Model(best.config, best.params, best.ms, best.vocab, best.class_start, best.speller_prime, meta,
                 best.name, best.param_dtype, best.kn)
    best.save(output)
    log(f"dynamic evaluation: seg_len {best.config['seg_len']} lr {best.config['lr']:g} "
        f"decay {best.config['decay']:g} -> {output}")
    return best


if __name__ == "__main__":
    sys.exit(main())
