#!/usr/bin/env bash
# CI: the wheel.  Build it once (pip wheel: the C core compiled once, linked into both bindings), install it
# into a fresh venv whose PATH holds no C compiler, and compress, test and decompress a real file with the
# installed command.  Fails when any step fails; nothing here can skip.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t0=$(date +%s)
python3 -m pip wheel --quiet --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/nlmcodec-*.whl)
echo "wheel: $(basename "$wheel"), $(stat -c %s "$wheel") bytes, built in $(( $(date +%s) - t0 )) s"
python3 -m venv "$work/venv"
bin="$work/venv/bin"
# the installed package must run where there is no compiler: PATH is the venv's bin alone, CC unset
for cc in gcc cc clang; do
    if PATH="$bin" command -v "$cc" >/dev/null; then echo "wheel lane: $cc is on the venv's PATH" >&2; exit 1; fi
done
nocc=(env -i HOME="$work" PATH="$bin" LANG=C.UTF-8 PIP_DISABLE_PIP_VERSION_CHECK=1)
"${nocc[@]}" "$bin/python" -m pip install --quiet --only-binary=:all: "$wheel"
test -s "$work/venv/share/man/man1/nlmcodec.1" || { echo "wheel lane: the man page was not installed" >&2; exit 1; }
cp README.md "$work/sample.txt"
(cd "$work" && "${nocc[@]}" "$bin/nlmcodec" -k sample.txt && "${nocc[@]}" "$bin/nlmcodec" -t sample.txt.nlm \
    && "${nocc[@]}" "$bin/nlmcodec" -dc sample.txt.nlm > roundtrip.txt)
cmp "$work/sample.txt" "$work/roundtrip.txt"
(cd "$work" && "${nocc[@]}" NLMCODEC_BACKEND=cffi "$bin/python" -c \
    "import nlmcodec; d = open('sample.txt', 'rb').read(); assert nlmcodec.decompress(nlmcodec.compress(d)) == d")
echo "wheel lane: installed without a compiler; $(stat -c %s "$work/sample.txt") -> $(stat -c %s "$work/sample.txt.nlm") bytes, round trip identical on both bindings ($(( $(date +%s) - t0 )) s)"
