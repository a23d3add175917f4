"""The man page nlmcodec(1), rendered from the command line's own parser (options._build_parser), so the page
and ``--help`` cannot disagree.  ``python -m nlmcodec.cli.manpage > docs/nlmcodec.1`` writes the page the
package installs (setup.py: share/man/man1); tests/test_cli_xz.py checks the file is what this renders."""

import argparse
import sys

from .options import _build_parser


def _roff(text):
    """Text for a roff line: backslashes and hyphens escaped, no line starting with a control character."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def _expand(action, prog):
    return action.help % dict(vars(action), prog=prog) if action.help else ""


def _option_names(action):
    names = ", ".join(f"\\fB{_roff(s)}\\fR" for s in action.option_strings)
    if action.nargs != 0 and action.metavar is not None:
        names += f" \\fI{_roff(action.metavar)}\\fR"
    elif action.nargs != 0 and action.option_strings:
        names += f" \\fI{_roff(action.dest.upper())}\\fR"
    return names


def _first_sentence(text):
    s = text.split(". ")[0].rstrip(".")
    return s[:1].lower() + s[1:]


def render_man():
    """The page as text (roff, man macros)."""
    p = _build_parser()
    prog = p.prog
    out = [f'.TH {prog.upper()} 1 "" "{prog}" "User Commands"',
           ".SH NAME", f"{prog} \\- {_roff(_first_sentence(p.description))}",
           ".SH SYNOPSIS", f".B {prog}", _roff(p.usage.replace('%(prog)s ', '')),
           ".SH DESCRIPTION", _roff(p.description)]
    for group in p._action_groups:
        actions = [a for a in group._group_actions if a.option_strings and a.help is not argparse.SUPPRESS]
        if not actions:
            continue
        out.append(f".SS {_roff(group.title[0].upper() + group.title[1:])}")
        for a in actions:
            out += [".TP", _option_names(a), _roff(_expand(a, prog))]
    epilog = p.epilog % {"prog": prog}
    out += [".SH NOTES", _roff(epilog), ".SH SEE ALSO", "xz(1), zstd(1)"]
    return "\n".join(out) + "\n"


def main():
    sys.stdout.write(render_man())


if __name__ == "__main__":
    main()
