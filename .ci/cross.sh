#!/usr/bin/env bash
# Cross-architecture lane (issue 12): the golden vectors' word-model blocks decode and re-encode to the
# x86-64 bytes on aarch64 and big-endian s390x, under qemu-user (.ci/cross/lane.py does the work).
# Installs Debian's cross compilers and qemu-user with apt-get when missing.  Fails closed: a lane that did
# not run is a failure, never a pass.  When the tools are missing and cannot be installed (no apt-get, or
# the install fails) it says why and exits 2, in CI (CI=true) and outside it alike; a target that runs and
# mismatches exits 1 (lane.py).
# Time (measured with the tools installed, on a quiet 2-core machine, formats 13 and 14): 683 s wall; the replay
# of blocks_light.bin (115 block sets: every format-14 vector up to lane.py's budget, format 13's small tiny-model
# ones, export_blocks.py) took 221 s under qemu-aarch64 and 657 s under qemu-s390x (the slower emulator), run in
# parallel, the native replay of every vector 30 s; plus, on a fresh machine, the apt-get install (under a
# minute here).  Format 16, started by .ci/run beside the test lanes: 917 s in a CI rehearsal (the whole run
# 2,598 s), 274 s of CPU of it the native replay of every vector, which now replays the light file as the
# emulated targets do (the test lanes decode and re-encode every vector on x86-64).
set -uo pipefail
cd "$(dirname "$0")/.."
PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu gcc-s390x-linux-gnu libc6-dev-s390x-cross binutils-s390x-linux-gnu qemu-user"
TOOLS="aarch64-linux-gnu-gcc aarch64-linux-gnu-objdump s390x-linux-gnu-gcc s390x-linux-gnu-objdump qemu-aarch64 qemu-s390x"
where="${CI:+ (CI=$CI)}"

missing_tools() {
    local m=""
    for t in $TOOLS; do command -v "$t" >/dev/null 2>&1 || m="$m $t"; done
    echo "${m# }"
}

missing="$(missing_tools)"
if [ -n "$missing" ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "cross-architecture lane: FAILED, NOT RUN$where: missing $missing, and no apt-get to install $PKGS" >&2
        exit 2
    fi
    # (flock: .ci/run starts this lane beside the fuzz lane, which may install with apt-get too)
    if ! { flock 9 && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PKGS; } 9>/tmp/nlmcodec-apt.lock >/tmp/nlmcodec-cross-apt.log 2>&1; then
        tail -5 /tmp/nlmcodec-cross-apt.log >&2
        echo "cross-architecture lane: apt-get could not install all of $PKGS (log: /tmp/nlmcodec-cross-apt.log)" >&2
    fi
    missing="$(missing_tools)"
    if [ -n "$missing" ]; then
        echo "cross-architecture lane: FAILED, NOT RUN$where: still missing after apt-get: $missing" >&2
        exit 2
    fi
fi
python .ci/cross/lane.py
