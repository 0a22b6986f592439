"""The tabular page's tables, generated at build time from the committed run.

``docs/_static/tabular/results.md`` is the ``results.md`` that
``sklcalib benchmark --suite tabular`` wrote (the command is on the page); this
module turns it into reStructuredText for ``docs/user_guide/tabular.rst`` to
include, so that every number on the page is one the benchmark printed, never
one typed by hand.
"""

import re
from pathlib import Path

HERE = Path(__file__).parent
SOURCE = HERE / "_static" / "tabular" / "results.md"
TARGET = HERE / "generated" / "tabular_results.rst"

# markdown heading depth -> reST underline, below the page's own "=" and "-"
_UNDERLINES = {2: "~", 3: "^", 4: '"'}


def _inline(text):
    # `code` -> ``code`` (reST's inline literal); bold and italics are the same
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines):
    header, body = _cells(lines[0]), [_cells(ln) for ln in lines[2:]]
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *body]:
        for i, cell in enumerate(row):
            out.append(("   * - " if i == 0 else "     - ") + (_inline(cell) or ".."))
    return [*out, ""]


def markdown_to_rst(text):
    """The benchmark's markdown (headings, paragraphs, pipe tables) as reST.

    The top-level ``#`` title is dropped (the page has its own); ``##``,
    ``###`` and ``####`` become sub-sections of the section that includes it.
    """
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        heading = re.match(r"^(#+) (.*)$", line)
        if heading:
            depth, title = len(heading.group(1)), _inline(heading.group(2))
            if depth > 1:
                out += [title, _UNDERLINES[min(depth, 4)] * len(title), ""]
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            out += _table(block)
        else:
            out.append(_inline(line))
            i += 1
    return "\n".join(out).rstrip() + "\n"


def write_tabular_results():
    """Write ``generated/tabular_results.rst`` from the committed run."""
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    text = markdown_to_rst(SOURCE.read_text())
    # unchanged, the file keeps its time stamp: a second build of the same
    # tree (the doctest builder after the html one) then reuses the parsed
    # pages instead of reading this page and the one including it again
    if not TARGET.is_file() or TARGET.read_text() != text:
        TARGET.write_text(text)
