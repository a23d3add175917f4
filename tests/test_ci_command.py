"""The README's test command and the one .ci/run runs are the same: CI runs what a reader is told to run.

.ci/run splits the command at its first `&&` (the install, then the test lanes, with the cross-architecture, wheel
and fuzz lanes started between them); this test joins its two parts again and compares them with the README's
line.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_test_command() -> str:
    lines = [ln for ln in (ROOT / "README.md").read_text().splitlines()
             if ln.startswith("pip install -e '.[test") and "pytest" in ln]
    assert len(lines) == 1, lines
    return lines[0].strip()


def ci_test_command() -> str:
    text = (ROOT / ".ci" / "run").read_text()
    install = re.findall(r"^if (pip install -e \S+); then$", text, re.M)
    lanes = [ln.strip().removesuffix(" || status=$?") for ln in text.splitlines()
             if ln.strip().startswith("python -m pytest") and ln.strip().endswith("|| status=$?")]
    assert len(install) == 1 and len(lanes) == 1, (install, lanes)
    return f"{install[0]} && {lanes[0]}"


def test_ci_runs_the_readme_test_command():
    assert ci_test_command() == readme_test_command()
