"""``python -m nlmcodec`` and the ``nlmcodec`` console script; the implementation is in ``_cli.py``."""

import sys

from ._cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
