"""NLMError and the one map from C error codes to Python exceptions."""


class NLMError(Exception):
    """Corrupt or truncated data, a failed check, a wrong or missing model, or a core failure."""


def check(code, what=""):
    """Raise NLMError for a negative C status code; return the value otherwise."""
    if isinstance(code, int) and code < 0:
        from ._backend import native

        prefix = f"{what}: " if what else ""
        if code == -1:
            raise MemoryError(prefix + native.error_name(code))
        raise NLMError(prefix + native.error_name(code))
    return code
