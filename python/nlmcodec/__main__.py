"""``python -m nlmcodec`` and the ``nlmcodec`` console script; the implementation is the ``cli`` sub-package."""

import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
