#!/usr/bin/env bash
# clang for the determinism tests (issue 12): tests/test_dual_build.py builds the C core with gcc and
# clang and compares the bytes; tests/test_build.py's deliberately contracting build uses clang.  Installs
# clang with apt-get when it is missing; never fails CI (the tests then skip, saying clang is missing).
# Time: under a minute (one apt-get install; nothing when clang is already there).
if command -v clang >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1 && { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang; } >/tmp/nlmcodec-clang-apt.log 2>&1; then
    echo "clang installed: $(clang --version | head -1)"
else
    echo "clang could not be installed with apt-get: the clang builds of tests/test_dual_build.py and tests/test_build.py will skip"
fi
exit 0
