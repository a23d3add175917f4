"""vectorset.py: the golden vectors as data, for every reader (the tests, make_vectors.py, the C vector
driver's exporter).  Owns the layout of codec/vectors/:

    MANIFEST.json          one entry per vector and per input, with the SHA-256 of every file
    inputs/<id>.raw        each distinct input once; <id> is the first 16 hex digits of its SHA-256
    v<N>/ok/<name>.nlm     frames of format N that must decode to their input, byte-exact
    v<N>/errors/<name>.nlm frames of format N that must be refused with NLMError (the manifest's "why" is part
                           of the message)
    retired/<name>.nlm     frames of retired formats (0.1 series): refused with a message naming 0.1.0

The manifest:
    {"inputs": {id: {"name": ..., "size": ...}},
     "ok": {"v13/<name>": {"format_version", "model", "model_id", "adapt", "check", "reencode", "frames",
                           "input": id, "sha256": of the frame}},
     "errors": {"v13/<name>" | "retired/<name>": {"format_version", "why", "sha256"}}}

A frozen format's vectors never change (docs/format.md, format policy): tests/test_golden.py pins the
digest of each frozen format's manifest entries (frozen_digest).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MANIFEST_PATH = ROOT / "MANIFEST.json"
ADAPT_NAMES = {False: "static", True: "dynamic", "heads": "heads"}


def input_id(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class _Vector:
    key: str               # "<folder>/<name>": "v13/alice_4k-default-2-heads", "retired/v12-..."
    entry: dict            # its manifest entry; its fields read as attributes (format_version, model, why, ...)

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    def frame(self) -> bytes:
        return self.path.read_bytes()

    def __getattr__(self, k):
        try:
            return self.__dict__["entry"][k]
        except KeyError:
            raise AttributeError(k) from None


class OkVector(_Vector):
    @property
    def path(self) -> Path:
        fmt, name = self.key.split("/", 1)
        return ROOT / fmt / "ok" / f"{name}.nlm"

    @property
    def raw_path(self) -> Path:
        return ROOT / "inputs" / f"{self.entry['input']}.raw"

    def raw(self) -> bytes:
        return self.raw_path.read_bytes()


class ErrorVector(_Vector):
    @property
    def path(self) -> Path:
        fmt, name = self.key.split("/", 1)
        return ROOT / fmt / (f"{name}.nlm" if fmt == "retired" else f"errors/{name}.nlm")


def manifest() -> dict:
    return json.loads(MANIFEST_PATH.read_text())


def ok_vectors(version=None) -> list:
    m = manifest()
    return [OkVector(k, e) for k, e in sorted(m["ok"].items()) if version is None or e["format_version"] == version]


def error_vectors(version=None) -> list:
    m = manifest()
    return [ErrorVector(k, e) for k, e in sorted(m["errors"].items())
            if version is None or e["format_version"] == version]


def superseded(v, newest: int) -> bool:
    """v is an older format's unknown_version vector whose version byte a reader of format `newest` knows: it
    is still refused, by the header checksum (the vector changed the version byte and kept the checksum)."""
    return v.name == "unknown_version" and v.frame()[4] <= newest


def ok_vector(key: str) -> OkVector:
    return OkVector(key, manifest()["ok"][key])


def error_vector(key: str) -> ErrorVector:
    return ErrorVector(key, manifest()["errors"][key])


def frozen_digest(version: int, m=None) -> str:
    """SHA-256 over a format's manifest entries (ok and errors, with the SHA-256 of each frame and input):
    changes when any of its vectors changes, is added or is removed."""
    m = m or manifest()
    part = {"ok": {k: e for k, e in m["ok"].items() if e["format_version"] == version},
            "errors": {k: e for k, e in m["errors"].items() if e["format_version"] == version
                       and not k.startswith("retired/")}}
    ids = sorted({e["input"] for e in part["ok"].values()})
    part["inputs"] = {i: m["inputs"][i] for i in ids}
    return sha256(json.dumps(part, sort_keys=True).encode())
