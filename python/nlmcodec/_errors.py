"""NLMError, ModelFormatError and the one map from C error codes (csrc/nlm.h NLM_ERR_*) to Python exceptions."""

# The C error codes (csrc/nlm.h NLM_ERR_LIST); NLMError.code holds one of them, or None for errors
# found in Python (frame parsing, checks, models).
ERR_NOMEM = -1
ERR_CONFIG = -2
ERR_VOCAB = -3
ERR_CORRUPT = -4
ERR_DST_SIZE = -5
ERR_CAPACITY = -6
ERR_STATE = -7
ERR_SELFTEST = -8
ERR_UNSUPPORTED = -9


class NLMError(Exception):
    """Corrupt or truncated data, a failed check, a wrong or missing model, or a core failure.

    ``code`` is the C core's error code (``ERR_*`` in this module) when the core reported it, else None.
    """

    def __init__(self, *args, code=None):
        super().__init__(*args)
        self.code = code


class ModelFormatError(NLMError, ValueError):
    """The bytes are not a valid nlmcodec model file.  An NLMError; also a ValueError (what it was before
    it became an NLMError), so ``except ValueError`` keeps working."""


def check(code, what=""):
    """Raise for a negative C status code (MemoryError for NLM_ERR_NOMEM, else NLMError with .code);
    return the value otherwise."""
    if isinstance(code, int) and code < 0:
        from ._backend import native

        prefix = f"{what}: " if what else ""
        if code == ERR_NOMEM:
            raise MemoryError(prefix + native.error_name(code))
        if code == ERR_SELFTEST:   # name it: the user must know the build, not the data, is at fault
            prefix += "NLM_ERR_SELFTEST: "
        raise NLMError(prefix + native.error_name(code), code=code)
    return code
