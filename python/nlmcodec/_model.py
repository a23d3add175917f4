"""The model file (.nlmm): one reader/writer.  Layout: codec/MODEL_FORMAT.md.

All integers and floats little-endian.  The model id is the SHA-256 of the whole file.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path

import numpy as np

from ._errors import ModelFormatError  # noqa: F401  (raised here; defined with NLMError, re-exported)

MAGIC = b"\x89NLMM\r\n\x1a"
MODEL_FORMAT_VERSION = 1
DTYPE_F32, DTYPE_F16 = 0, 1
NTENSORS = 14
MAX_V = 1 << 20
MAX_DIM = 4096
MAX_C = 1 << 16
MAX_BODY = 32
MAX_PRIME = 64 << 20
MAX_META = 16 << 20
_HDR = struct.Struct("<8sIiiiiifffI")   # magic, version, V, D, H, C, seg_len, lr, decay, eps, param dtype


def param_count(V, D, H, C) -> int:
    return V * D + 4 * D + 8 * D + H * D + H * H + H + C * H + C + V * H + V + 4 * H + V * 4 + 8 * H + V * 8


def _check_config(cfg: dict) -> None:
    V, D, H, C, L = (cfg.get(k) for k in ("V", "D", "H", "C", "seg_len"))
    for name, v in (("V", V), ("D", D), ("H", H), ("C", C), ("seg_len", L)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise ModelFormatError(f"config {name} must be an integer")
    if not (2 <= V <= MAX_V):
        raise ModelFormatError(f"V={V} out of range [2, {MAX_V}]")
    for name, v in (("D", D), ("H", H)):
        if not (16 <= v <= MAX_DIM) or v % 16:
            raise ModelFormatError(f"{name}={v} must be a multiple of 16 in [16, {MAX_DIM}]")
    if not (1 <= C <= min(V, MAX_C)):
        raise ModelFormatError(f"C={C} out of range [1, min(V, {MAX_C})]")
    if not (1 <= L <= 1 << 16):
        raise ModelFormatError(f"seg_len={L} out of range")
    for k in ("lr", "decay", "eps"):
        v = cfg.get(k)
        if not isinstance(v, (float, int, np.floating)) or not math.isfinite(float(v)) or float(v) < 0:
            raise ModelFormatError(f"config {k} must be a finite float >= 0")


class _Reader:
    def __init__(self, b: bytes):
        self.b, self.o = b, 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.o + n > len(self.b):
            raise ModelFormatError(f"truncated model file (reading {what}: need {n} bytes at offset {self.o}, "
                                   f"file has {len(self.b)})")
        r = self.b[self.o:self.o + n]
        self.o += n
        return r

    def u32(self, what):
        return struct.unpack("<I", self.take(4, what))[0]


class Model:
    """A trained model: config, vocabulary, class map, RMS gradients, speller priming list, weights."""

    def __init__(self, config: dict, params, ms, vocab, class_start, speller_prime: bytes = b"",
                 metadata: dict | None = None, name: str = "", param_dtype: str = "float16"):
        self.config = {"V": int(config["V"]), "D": int(config["D"]), "H": int(config["H"]),
                       "C": int(config["C"]), "seg_len": int(config.get("seg_len", 20)),
                       "lr": float(np.float32(config.get("lr", 0.0))),
                       "decay": float(np.float32(config.get("decay", 0.0))),
                       "eps": float(np.float32(config.get("eps", 0.0)))}
        if param_dtype not in ("float16", "float32"):
            raise ValueError("param_dtype must be 'float16' or 'float32'")
        self.param_dtype = param_dtype
        p = np.asarray(params, dtype=np.float32).reshape(-1)
        if param_dtype == "float16":
            with np.errstate(over="ignore"):
                p = p.astype(np.float16).astype(np.float32)   # the exact values the file will hold
        self.params = np.ascontiguousarray(p)
        self.ms = np.ascontiguousarray(np.asarray(ms, dtype=np.float32).reshape(-1))
        self.vocab = [bytes(v) for v in vocab]
        self.class_start = np.ascontiguousarray(np.asarray(class_start, dtype=np.int32).reshape(-1))
        self.speller_prime = bytes(speller_prime)
        self.metadata = dict(metadata or {})
        if name and "name" not in self.metadata:
            self.metadata["name"] = name          # the name travels in the (hashed) metadata
        self.name = name or str(self.metadata.get("name", ""))
        self._validate()
        self._bytes = None

    # ---- validation shared by the constructor and the reader
    def _validate(self):
        cfg = self.config
        _check_config(cfg)
        V, D, H, C = cfg["V"], cfg["D"], cfg["H"], cfg["C"]
        if self.params.shape != (param_count(V, D, H, C),):
            raise ModelFormatError(f"parameter block has {self.params.size} floats, expected {param_count(V, D, H, C)}")
        if not np.all(np.isfinite(self.params)):
            raise ModelFormatError("parameter block contains non-finite values")
        if self.ms.shape != (NTENSORS,) or not np.all(np.isfinite(self.ms)) or np.any(self.ms < 0):
            raise ModelFormatError("ms must be 14 finite non-negative floats")
        if len(self.vocab) != V:
            raise ModelFormatError(f"vocabulary has {len(self.vocab)} entries, expected V={V}")
        if self.vocab[0] != b"" or self.vocab[1] != b"":
            raise ModelFormatError("ids 0 (<unk>) and 1 (<end>) must have empty bodies")
        seen = set()
        for i, v in enumerate(self.vocab[2:], 2):
            if not (1 <= len(v) <= MAX_BODY):
                raise ModelFormatError(f"vocabulary entry {i} has length {len(v)} (must be 1..{MAX_BODY})")
            if v in seen:
                raise ModelFormatError(f"duplicate vocabulary entry {v!r}")
            seen.add(v)
        cs = self.class_start
        if cs.shape != (C + 1,) or cs[0] != 0 or cs[-1] != V or np.any(np.diff(cs.astype(np.int64)) <= 0):
            raise ModelFormatError("class_start must be C+1 strictly increasing ids from 0 to V")
        if len(self.speller_prime) > MAX_PRIME:
            raise ModelFormatError("speller priming list too large")

    # ---- serialisation
    def to_bytes(self) -> bytes:
        if self._bytes is not None:
            return self._bytes
        cfg = self.config
        out = [_HDR.pack(MAGIC, MODEL_FORMAT_VERSION, cfg["V"], cfg["D"], cfg["H"], cfg["C"], cfg["seg_len"],
                         cfg["lr"], cfg["decay"], cfg["eps"],
                         DTYPE_F16 if self.param_dtype == "float16" else DTYPE_F32)]
        vb = b"".join(bytes([len(v)]) + v for v in self.vocab)
        out += [struct.pack("<I", len(vb)), vb]
        out.append(self.class_start.astype("<i4").tobytes())
        out.append(self.ms.astype("<f4").tobytes())
        out += [struct.pack("<I", len(self.speller_prime)), self.speller_prime]
        pdt = "<f2" if self.param_dtype == "float16" else "<f4"
        out.append(self.params.astype(pdt).tobytes())
        meta = json.dumps(self.metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
        out += [struct.pack("<I", len(meta)), meta]
        self._bytes = b"".join(out)
        return self._bytes

    @property
    def model_id(self) -> bytes:
        return hashlib.sha256(self.to_bytes()).digest()

    def save(self, path) -> None:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(self.to_bytes())
        tmp.replace(path)

    @classmethod
    def load(cls, path) -> "Model":
        path = Path(path)
        m = cls.from_bytes(path.read_bytes())
        if not m.name:
            m.name = path.stem
        return m

    @classmethod
    def from_bytes(cls, b) -> "Model":
        b = bytes(b)
        r = _Reader(b)
        if len(b) < 8 or b[:8] != MAGIC:
            raise ModelFormatError("not an nlmcodec model file (bad magic)")
        (_, ver, V, D, H, C, L, lr, decay, eps, pdt) = _HDR.unpack(r.take(_HDR.size, "header"))
        if ver != MODEL_FORMAT_VERSION:
            raise ModelFormatError(f"unsupported model format version {ver} (this build reads {MODEL_FORMAT_VERSION})")
        cfg = {"V": V, "D": D, "H": H, "C": C, "seg_len": L, "lr": float(lr), "decay": float(decay),
               "eps": float(eps)}
        _check_config(cfg)
        if pdt not in (DTYPE_F16, DTYPE_F32):
            raise ModelFormatError(f"unknown parameter dtype code {pdt}")
        need = _HDR.size + 4 + 4 * (C + 1) + 4 * NTENSORS + 4 + param_count(V, D, H, C) * (2 if pdt == DTYPE_F16 else 4) + 4
        if need > len(b):     # the shape alone needs more bytes than the file has: fail before anything is read
            raise ModelFormatError(f"truncated model file: V={V} D={D} H={H} C={C} need at least {need} bytes, "
                                   f"the file has {len(b)}")
        vlen = r.u32("vocabulary size")
        if vlen > V * (1 + MAX_BODY):
            raise ModelFormatError("vocabulary blob too large")
        vb = r.take(vlen, "vocabulary")
        vocab, o = [], 0
        for i in range(V):
            if o >= len(vb):
                raise ModelFormatError(f"vocabulary blob ends after {i} of {V} entries")
            n = vb[o]
            if o + 1 + n > len(vb):
                raise ModelFormatError("vocabulary entry runs past the blob")
            vocab.append(vb[o + 1:o + 1 + n])
            o += 1 + n
        if o != len(vb):
            raise ModelFormatError("trailing bytes in the vocabulary blob")
        cs = np.frombuffer(r.take(4 * (C + 1), "class_start"), dtype="<i4").astype(np.int32)
        ms = np.frombuffer(r.take(4 * NTENSORS, "ms"), dtype="<f4").astype(np.float32)
        plen = r.u32("speller priming length")
        if plen > MAX_PRIME:
            raise ModelFormatError("speller priming list too large")
        prime = r.take(plen, "speller priming list")
        n = param_count(V, D, H, C)
        isz = 2 if pdt == DTYPE_F16 else 4
        raw = r.take(n * isz, "parameter block")     # take() checks the length before anything is allocated
        params = np.frombuffer(raw, dtype="<f2" if isz == 2 else "<f4").astype(np.float32)
        mlen = r.u32("metadata length")
        if mlen > MAX_META:
            raise ModelFormatError("metadata too large")
        mraw = r.take(mlen, "metadata")
        if r.o != len(b):
            raise ModelFormatError(f"{len(b) - r.o} trailing bytes after the model")
        try:
            meta = json.loads(mraw.decode("utf-8")) if mlen else {}
        except (UnicodeDecodeError, ValueError) as e:
            raise ModelFormatError(f"bad metadata JSON: {e}") from None
        if not isinstance(meta, dict):
            raise ModelFormatError("metadata must be a JSON object")
        m = cls(cfg, params, ms, vocab, cs, prime, meta, param_dtype="float16" if isz == 2 else "float32")
        m._bytes = b
        return m

    # ---- conveniences
    def vocab_blob(self) -> bytes:
        return b"".join(bytes([len(v)]) + v for v in self.vocab)

    def tensors(self):
        from .reference import split_params
        c = self.config
        return split_params(self.params, c["V"], c["D"], c["H"], c["C"])

    def with_config(self, **kw) -> "Model":
        cfg = dict(self.config)
        cfg.update(kw)
        return Model(cfg, self.params, self.ms, self.vocab, self.class_start, self.speller_prime,
                     self.metadata, self.name, self.param_dtype)

    def __repr__(self):
        c = self.config
        return (f"<nlmcodec Model {self.name or '?'} V={c['V']} D={c['D']} H={c['H']} C={c['C']} "
                f"id={self.model_id.hex()[:16]}>")
