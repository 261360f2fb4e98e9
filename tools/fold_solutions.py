"""Fold every solution of a chapter in the live notebook (Binder, `make lab`, a handout).

The book renders a solution as a closed dropdown (sphinx-exercise's gated `solution-start` /
`solution-end` with `:class: dropdown`); JupyterLab knows nothing of gated directives, so a solution
there sits in plain view and its answer prints under Run All. This marks, between each
`solution-start` and its `solution-end`, the markdown with `jupyter.source_hidden` and each code cell
with `jupyter.source_hidden` and `jupyter.outputs_hidden`: JupyterLab shows the collapsed bar until
the reader opens it. The book build ignores that metadata. Idempotent.

Usage: python tools/fold_solutions.py chapters/01_is_it_working.md [...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HIDDEN_MD = '+++ {"jupyter": {"source_hidden": true}}'
HIDDEN_CODE = "---\njupyter:\n  source_hidden: true\n  outputs_hidden: true\n---\n"
_START = re.compile(r"^```\{solution-start\}")
_END = re.compile(r"^```\{solution-end\}")


def fold(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    inside = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _START.match(line) or _END.match(line):
            is_end = bool(_END.match(line))
            if not (out and out[-1] == "" and len(out) > 1 and out[-2] == HIDDEN_MD):
                if out and out[-1] != "":
                    out.append("")
                out += [HIDDEN_MD, ""]
            inside = not is_end
            out.append(line)
            if is_end:  # the closing fence, then back to visible markdown
                i += 1
                out.append(lines[i])
                nxt = lines[i + 1:i + 3]
                if nxt[:2] != ["", "+++"]:
                    out += ["", "+++"]
            i += 1
            continue
        if inside and line.startswith("```{code-cell}"):
            out.append(line)
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if following.startswith(":") and not following.startswith(":jupyter:"):
                out.append(":jupyter: {source_hidden: true, outputs_hidden: true}")  # short options
            elif following != "---" and not following.startswith(":jupyter:"):
                out += HIDDEN_CODE.rstrip("\n").split("\n")
            i += 1
            continue
        if inside and line == "+++":  # a cell break inside the solution: keep it hidden
            out.append(HIDDEN_MD)
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    for name in argv:
        path = Path(name)
        path.write_text(fold(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
