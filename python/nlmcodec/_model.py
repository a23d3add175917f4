"""The model file (.nlmm): one reader/writer, and the native model built from it.  Layout: docs/model_format.md.

Two ways in.  ``Model(...)`` from arrays (training, tools) validates everything, weights included.
``Model.load`` / ``Model.from_bytes`` read a file's structure only: the file is mapped, its sections located
and range-checked, and the C core reads the parameter block in place (``Model.native()``: one immutable
NlmModel per Model, shared by every codec, thread and stream).  Nothing converts or scans the weights at load
time; ``Model.params`` etc. become numpy arrays only when asked for.  The model id is the SHA-256 of the whole
file, computed once per Model.  All integers and floats little-endian.  numpy is imported only by the
array-side methods, so loading a model and compressing with it never imports it.
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import struct
import threading
from numbers import Integral, Real
from pathlib import Path

from ._errors import ModelFormatError  # noqa: F401  (raised here; defined with NLMError, re-exported)

MAGIC = b"\x89NLMM\r\n\x1a"
MODEL_FORMAT_VERSION = 2          # the newest this build reads and writes; an Elman model is written as version 1
READ_MODEL_VERSIONS = (1, 2)
ARCHS = ("elman", "lstm", "nplm")  # model types by their code in the file (nlm.h NLM_ARCH_*); version 1 is elman
NPLM_CONTEXT = (2, 16)             # the NPLM's context (previous tokens), stored in bits 8-15 of the type field
DTYPE_F32, DTYPE_F16 = 0, 1
NTENSORS = 14
MAX_V = 1 << 20
MAX_DIM = 4096
MAX_C = 1 << 16
MAX_BODY = 32
MAX_PRIME = 64 << 20
MAX_META = 16 << 20
_HDR = struct.Struct("<8sIiiiiifffI")   # magic, version, V, D, H, C, seg_len, lr, decay, eps, param dtype
_ARCH = struct.Struct("<I")              # version 2: the model type's code, after the header
KN_FLAG = 1 << 16                        # type field bit 16: a Kneser-Ney section follows the parameters
MAX_KN = 1 << 31                         # bytes of a Kneser-Ney section


def param_count(V, D, H, C, arch: str = "elman", context: int = 0) -> int:
    heads = C * H + C + V * H + V + 4 * H + V * 4 + 8 * H + V * 8
    if arch == "nplm":                    # Wx (H×D), Wh (H×(K−1)D), bh (H)   (docs/format.md §2.4)
        return V * D + 4 * D + 8 * D + H * D + H * (context - 1) * D + H + heads
    G = 4 if arch == "lstm" else 1        # rows of Wx, Wh, bh per hidden unit
    return V * D + 4 * D + 8 * D + G * (H * D + H * H + H) + heads


def arch_code(cfg: dict) -> int:
    """The model type field of a file (and NlmConfig.arch): the type's code, the NPLM's context << 8."""
    return ARCHS.index(cfg["arch"]) | (int(cfg.get("context", 0)) << 8 if cfg["arch"] == "nplm" else 0)


def type_field(cfg: dict, has_kn: bool) -> int:
    """The model file's type field (6a): arch_code, plus KN_FLAG when a Kneser-Ney section follows."""
    return arch_code(cfg) | (KN_FLAG if has_kn else 0)


def _check_config(cfg: dict) -> None:
    V, D, H, C, L = (cfg.get(k) for k in ("V", "D", "H", "C", "seg_len"))
    for name, v in (("V", V), ("D", D), ("H", H), ("C", C), ("seg_len", L)):
        if not isinstance(v, Integral) or isinstance(v, bool):
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
        if not isinstance(v, Real) or isinstance(v, bool) or not math.isfinite(float(v)) or float(v) < 0:
            raise ModelFormatError(f"config {k} must be a finite float >= 0")
    if cfg.get("arch", "elman") not in ARCHS:
        raise ModelFormatError(f"unknown model type {cfg.get('arch')!r} (this build knows {', '.join(ARCHS)})")
    k = cfg.get("context", 0)
    if cfg.get("arch") == "nplm" and (not isinstance(k, Integral) or not NPLM_CONTEXT[0] <= k <= NPLM_CONTEXT[1]):
        raise ModelFormatError(f"nplm context {k!r} out of range [{NPLM_CONTEXT[0]}, {NPLM_CONTEXT[1]}]")


def _f32(x) -> float:
    """x rounded to float32 (the precision the file stores)."""
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def _parse(b) -> dict:
    """Locate and range-check every section of a model file held in the buffer b (bytes or memoryview).

    Reads the header, the length fields and the small sections; never the weights.  Returns the config,
    the parameter dtype, the metadata and {section: (offset, length)}.  Raises ModelFormatError."""
    n_file = len(b)
    o = 0

    def take(n, what):
        nonlocal o
        if n < 0 or o + n > n_file:
            raise ModelFormatError(f"truncated model file (reading {what}: need {n} bytes at offset {o}, "
                                   f"file has {n_file})")
        span = (o, n)
        o += n
        return span

    def u32(what):
        a, _ = take(4, what)
        return struct.unpack_from("<I", b, a)[0]

    if n_file < 8 or bytes(b[:8]) != MAGIC:
        raise ModelFormatError("not an nlmcodec model file (bad magic)")
    a, _ = take(_HDR.size, "header")
    (_, ver, V, D, H, C, L, lr, decay, eps, pdt) = _HDR.unpack_from(b, a)
    if ver not in READ_MODEL_VERSIONS:
        raise ModelFormatError(f"unsupported model format version {ver} (this build reads "
                               f"{', '.join(map(str, READ_MODEL_VERSIONS))})")
    arch, context, has_kn = "elman", 0, False
    if ver >= 2:
        code = _ARCH.unpack_from(b, take(_ARCH.size, "model type")[0])[0]
        has_kn = bool(code & KN_FLAG)
        if (code & 0xFF) >= len(ARCHS) or code >> 17 or ((code >> 8) & 0xFF and ARCHS[code & 0xFF] != "nplm"):
            raise ModelFormatError(f"unknown model type code {code} (this build knows {', '.join(ARCHS)}, "
                                   f"with or without a Kneser-Ney section)")
        arch, context = ARCHS[code & 0xFF], (code >> 8) & 0xFF
    cfg = {"V": V, "D": D, "H": H, "C": C, "seg_len": L, "lr": float(lr), "decay": float(decay), "eps": float(eps),
           "arch": arch}
    if arch == "nplm":
        cfg["context"] = context
    _check_config(cfg)
    if pdt not in (DTYPE_F16, DTYPE_F32):
        raise ModelFormatError(f"unknown parameter dtype code {pdt}")
    need = _HDR.size + 4 + 4 * (C + 1) + 4 * NTENSORS + 4 + param_count(V, D, H, C, arch, context) * (2 if pdt == DTYPE_F16 else 4) + 4
    if need > n_file:     # the shape alone needs more bytes than the file has: fail before anything is read
        raise ModelFormatError(f"truncated model file: V={V} D={D} H={H} C={C} need at least {need} bytes, "
                               f"the file has {n_file}")
    spans = {}
    vlen = u32("vocabulary size")
    if vlen > V * (1 + MAX_BODY):
        raise ModelFormatError("vocabulary blob too large")
    spans["vocab"] = take(vlen, "vocabulary")
    spans["class_start"] = take(4 * (C + 1), "class_start")
    spans["ms"] = take(4 * NTENSORS, "ms")
    ms = struct.unpack_from(f"<{NTENSORS}f", b, spans["ms"][0])
    if not all(math.isfinite(x) and x >= 0 for x in ms):
        raise ModelFormatError("ms must be 14 finite non-negative floats")
    plen = u32("speller priming length")
    if plen > MAX_PRIME:
        raise ModelFormatError("speller priming list too large")
    spans["prime"] = take(plen, "speller priming list")
    isz = 2 if pdt == DTYPE_F16 else 4
    spans["params"] = take(param_count(V, D, H, C, arch, context) * isz, "parameter block")   # checked before any use
    if has_kn:            # field 13a: its contents are validated by the C core (kn.c), which alone reads them
        klen = u32("Kneser-Ney section length")
        if klen > MAX_KN:
            raise ModelFormatError("Kneser-Ney section too large")
        spans["kn"] = take(klen, "Kneser-Ney section")
    mlen = u32("metadata length")
    if mlen > MAX_META:
        raise ModelFormatError("metadata too large")
    ma, _ = take(mlen, "metadata")
    if o != n_file:
        raise ModelFormatError(f"{n_file - o} trailing bytes after the model")
    try:
        meta = json.loads(bytes(b[ma:ma + mlen]).decode("utf-8")) if mlen else {}
    except (UnicodeDecodeError, ValueError) as e:
        raise ModelFormatError(f"bad metadata JSON: {e}") from None
    if not isinstance(meta, dict):
        raise ModelFormatError("metadata must be a JSON object")
    return {"config": cfg, "param_dtype": "float16" if isz == 2 else "float32", "metadata": meta, "spans": spans}


class Model:
    """A trained model: config, vocabulary, class map, RMS gradients, speller priming list, weights."""

    def __init__(self, config: dict, params, ms, vocab, class_start, speller_prime: bytes = b"",
                 metadata: dict | None = None, name: str = "", param_dtype: str = "float16", kn: bytes = b""):
        import numpy as np

        self.config = {"V": int(config["V"]), "D": int(config["D"]), "H": int(config["H"]),
                       "C": int(config["C"]), "seg_len": int(config.get("seg_len", 20)),
                       "lr": _f32(config.get("lr", 0.0)), "decay": _f32(config.get("decay", 0.0)),
                       "eps": _f32(config.get("eps", 0.0)), "arch": str(config.get("arch", "elman"))}
        if self.config["arch"] == "nplm":
            self.config["context"] = config.get("context")
        if param_dtype not in ("float16", "float32"):
            raise ValueError("param_dtype must be 'float16' or 'float32'")
        self.param_dtype = param_dtype
        p = np.asarray(params, dtype=np.float32).reshape(-1)
        if param_dtype == "float16":
            with np.errstate(over="ignore"):
                p = p.astype(np.float16).astype(np.float32)   # the exact values the file will hold
        self._params = np.ascontiguousarray(p)
        self._ms = np.ascontiguousarray(np.asarray(ms, dtype=np.float32).reshape(-1))
        self._vocab = [bytes(v) for v in vocab]
        self._class_start = np.ascontiguousarray(np.asarray(class_start, dtype=np.int32).reshape(-1))
        self._prime = bytes(speller_prime)
        self._kn = bytes(kn)
        self.metadata = dict(metadata or {})
        if name and "name" not in self.metadata:
            self.metadata["name"] = name          # the name travels in the (hashed) metadata
        self.name = name or str(self.metadata.get("name", ""))
        self._file = self._spans = self._map = None
        self._id = self._native = None
        self._lock = threading.Lock()
        self._validate()

    # ---- validation of a model built from arrays (a loaded file is checked by _parse and the C core)
    def _validate(self):
        import numpy as np

        cfg = self.config
        _check_config(cfg)
        V, D, H, C = cfg["V"], cfg["D"], cfg["H"], cfg["C"]
        n = param_count(V, D, H, C, cfg["arch"], cfg.get("context", 0))
        if self._params.shape != (n,):
            raise ModelFormatError(f"parameter block has {self._params.size} floats, expected {n}")
        if not np.all(np.isfinite(self._params)):
            raise ModelFormatError("parameter block contains non-finite values")
        if self._ms.shape != (NTENSORS,) or not np.all(np.isfinite(self._ms)) or np.any(self._ms < 0):
            raise ModelFormatError("ms must be 14 finite non-negative floats")
        if len(self._vocab) != V:
            raise ModelFormatError(f"vocabulary has {len(self._vocab)} entries, expected V={V}")
        if self._vocab[0] != b"" or self._vocab[1] != b"":
            raise ModelFormatError("ids 0 (<unk>) and 1 (<end>) must have empty bodies")
        seen = set()
        for i, v in enumerate(self._vocab[2:], 2):
            if not (1 <= len(v) <= MAX_BODY):
                raise ModelFormatError(f"vocabulary entry {i} has length {len(v)} (must be 1..{MAX_BODY})")
            if v in seen:
                raise ModelFormatError(f"duplicate vocabulary entry {v!r}")
            seen.add(v)
        cs = self._class_start
        if cs.shape != (C + 1,) or cs[0] != 0 or cs[-1] != V or np.any(np.diff(cs.astype(np.int64)) <= 0):
            raise ModelFormatError("class_start must be C+1 strictly increasing ids from 0 to V")
        if len(self._prime) > MAX_PRIME:
            raise ModelFormatError("speller priming list too large")

    # ---- the file's sections (a loaded model reads them from the mapped file on first use)
    def _section(self, name):
        a, n = self._spans[name]
        return self._file[a:a + n]

    @property
    def params(self):
        """The §2 parameter block as float32 (numpy; for a loaded model, converted on first access)."""
        if self._params is None:
            import numpy as np
            raw = self._section("params")
            self._params = np.frombuffer(raw, dtype="<f2" if self.param_dtype == "float16" else "<f4") \
                .astype(np.float32)
        return self._params

    @property
    def ms(self):
        if self._ms is None:
            import numpy as np
            self._ms = np.frombuffer(self._section("ms"), dtype="<f4").astype(np.float32)
        return self._ms

    @property
    def class_start(self):
        if self._class_start is None:
            import numpy as np
            self._class_start = np.frombuffer(self._section("class_start"), dtype="<i4").astype(np.int32)
        return self._class_start

    @property
    def vocab(self):
        if self._vocab is None:
            vb, out, o = bytes(self._section("vocab")), [], 0
            for _ in range(self.config["V"]):
                n = vb[o]
                out.append(vb[o + 1:o + 1 + n])
                o += 1 + n
            self._vocab = out
        return self._vocab

    @property
    def kn(self) -> bytes:
        """The Kneser-Ney section (docs/format.md §2.5, docs/model_format.md 13a), b"" when the model has none."""
        if self._kn is None:
            self._kn = bytes(self._section("kn")) if "kn" in self._spans else b""
        return self._kn

    @property
    def speller_prime(self) -> bytes:
        if self._prime is None:
            self._prime = bytes(self._section("prime"))
        return self._prime

    # ---- serialisation
    def to_bytes(self) -> bytes:
        if self._file is not None:
            return self._file if isinstance(self._file, bytes) else bytes(self._file)
        import numpy as np

        cfg = self.config
        # an Elman model without a Kneser-Ney section is version 1, byte for byte what it was before types
        elman = cfg["arch"] == "elman" and not self._kn
        out = [_HDR.pack(MAGIC, 1 if elman else 2, cfg["V"], cfg["D"], cfg["H"], cfg["C"], cfg["seg_len"],
                         cfg["lr"], cfg["decay"], cfg["eps"],
                         DTYPE_F16 if self.param_dtype == "float16" else DTYPE_F32)]
        if not elman:
            out.append(_ARCH.pack(type_field(cfg, bool(self._kn))))
        vb = self.vocab_blob()
        out += [struct.pack("<I", len(vb)), vb]
        out.append(self._class_start.astype("<i4").tobytes())
        out.append(self._ms.astype("<f4").tobytes())
        out += [struct.pack("<I", len(self._prime)), self._prime]
        pdt = "<f2" if self.param_dtype == "float16" else "<f4"
        out.append(np.asarray(self._params).astype(pdt).tobytes())
        if self._kn:
            out += [struct.pack("<I", len(self._kn)), self._kn]
        meta = json.dumps(self.metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
        out += [struct.pack("<I", len(meta)), meta]
        b = b"".join(out)
        self._file, self._spans = b, _parse(b)["spans"]
        return b

    @property
    def nbytes(self) -> int:
        """Size of the model file."""
        return len(self._file) if self._file is not None else len(self.to_bytes())

    @property
    def model_id(self) -> bytes:
        """SHA-256 of the whole file (computed once)."""
        if self._id is None:
            if self._file is None:
                self.to_bytes()
            self._id = hashlib.sha256(self._file).digest()
        return self._id

    def file_size(self) -> int:
        """Bytes of the model file: what a decode holds of the model (mapped or read), shared by its codecs."""
        if self._file is None:
            self.to_bytes()
        return len(self._file)

    def native(self):
        """The C model (one per Model, built on first use, shared by every codec on any thread)."""
        if self._native is None:
            with self._lock:
                if self._native is None:
                    self._native = self._build_native()
        return self._native

    def _build_native(self, native=None):
        """A new native model from the chosen binding (or the binding module given, for tests)."""
        if native is None:
            from ._backend import native
        if self._file is None:
            self.to_bytes()
        c = self.config
        conf = (c["V"], c["D"], c["H"], c["C"], c["seg_len"], c["lr"], c["decay"], c["eps"], arch_code(c))
        nm = native.Model(conf, self._section("params"), DTYPE_F16 if self.param_dtype == "float16" else DTYPE_F32,
                          self._section("ms"), self._section("vocab"), self._section("class_start"),
                          self._section("prime"))
        if nm.ok() and "kn" in self._spans:
            e = nm.set_kn(self._section("kn"))
            if e:
                from ._errors import ERR_CONFIG, check
                if e == ERR_CONFIG:
                    raise ModelFormatError(f"invalid model: its Kneser-Ney section: {native.error_name(e)}", code=e)
                check(e, "model")
        if not nm.ok():
            from ._errors import ERR_CONFIG, ERR_VOCAB, check

            if nm.err in (ERR_CONFIG, ERR_VOCAB):        # the file's contents: a bad model
                raise ModelFormatError(f"invalid model: {native.error_name(nm.err)}", code=nm.err)
            check(nm.err or ERR_CONFIG, "model")          # not the file: memory, the self-test (the one error map)
        return nm

    def save(self, path) -> None:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(self.to_bytes())
        tmp.replace(path)

    @classmethod
    def _from_file_buffer(cls, b, mapping=None) -> "Model":
        info = _parse(b)
        m = cls.__new__(cls)
        m.config, m.param_dtype, m.metadata = info["config"], info["param_dtype"], info["metadata"]
        m.name = str(m.metadata.get("name", ""))
        m._file, m._spans, m._map = b, info["spans"], mapping
        m._params = m._ms = m._vocab = m._class_start = m._prime = m._kn = None
        m._id = m._native = None
        m._lock = threading.Lock()
        m.native()          # the C core checks the vocabulary and the classes: a bad file fails here
        return m

    @classmethod
    def load(cls, path) -> "Model":
        """Map a model file and read its structure (the weights stay in the page cache, shared)."""
        path = Path(path)
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            if size == 0:
                raise ModelFormatError("not an nlmcodec model file (empty)")
            mp = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        # on failure the mapping is left to the garbage collector: views of it may still be alive in the
        # traceback, and closing a mapping with exported buffers raises BufferError
        m = cls._from_file_buffer(memoryview(mp), mp)
        if not m.name:
            m.name = path.stem
        return m

    @classmethod
    def from_bytes(cls, b) -> "Model":
        return cls._from_file_buffer(bytes(b))

    # ---- conveniences
    def vocab_blob(self) -> bytes:
        if self._file is not None:
            return bytes(self._section("vocab"))
        return b"".join(bytes([len(v)]) + v for v in self._vocab)

    def tensors(self):
        from .reference import split_params
        c = self.config
        return split_params(self.params, c["V"], c["D"], c["H"], c["C"], c["arch"], c.get("context", 3))

    def with_config(self, **kw) -> "Model":
        cfg = dict(self.config)
        cfg.update(kw)
        return Model(cfg, self.params, self.ms, self.vocab, self.class_start, self.speller_prime,
                     self.metadata, self.name, self.param_dtype, self.kn)

    def __repr__(self):
        c = self.config
        return (f"<nlmcodec Model {self.name or '?'} V={c['V']} D={c['D']} H={c['H']} C={c['C']} "
                f"id={self.model_id.hex()[:16]}>")
