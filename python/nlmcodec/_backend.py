"""Backend selection: the Cython extension (default) or the cffi module, like python-zstandard.

NLMCODEC_BACKEND=cython|cffi chooses; the chosen name is nlmcodec.backend.  Both expose the same
functions (lex, param_count, error_name, Codec) over the same C core and must give identical bytes.
"""
import os

_choice = os.environ.get("NLMCODEC_BACKEND", "cython").strip().lower() or "cython"
if _choice not in ("cython", "cffi"):
    raise ImportError(f"NLMCODEC_BACKEND must be 'cython' or 'cffi', not {_choice!r}")

try:
    if _choice == "cython":
        from . import _nlm_cy as native
    else:
        from . import _nlm_cffi_glue as native
except ImportError as exc:  # pragma: no cover - only on a broken install
    raise ImportError(f"nlmcodec: the {_choice} extension is not built ({exc}); run: pip install -e .") from exc

backend = _choice
