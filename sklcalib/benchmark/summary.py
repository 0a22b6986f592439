"""The benchmark's terminal summary: the headline table in at most 100 columns.

The full report (every metric, mean ± std) goes to ``results.md``; the terminal
gets test ECE before/after temperature scaling per loss and dataset, the runs
at or near chance, and where the files are.
"""

import textwrap

from sklcalib._utils._docstrings import fill_doc as _fill_doc
from sklcalib.benchmark.chance import runs_at_chance as _runs_at_chance
from sklcalib.benchmark.tables import _best_losses, _edge_counts, _ordered
from sklcalib.benchmark.tables import aggregate as _aggregate
from sklcalib.benchmark.tables import chance_counts as _chance_counts

__all__ = ["plain_text", "terminal_summary", "where_written"]

#: most runs at chance listed one per line before "and N more"
_MAX_LISTED = 8


@_fill_doc
def terminal_summary(
    rows, *, datasets=None, losses=None, run_dir=None, files=(), width=100
):
    """A short plain-text summary of a benchmark run that fits ``width`` columns.

    %(benchmark_rows_parameters)s
    run_dir : str or path-like, optional
        The folder the files were written to, named in the last lines.
    files : sequence of str, default=()
        Names of the other files written there.
    width : int, default=100
        Longest line. Datasets that do not fit beside each other go into a
        further block of the table.

    %(text_result_returns)s

    Examples
    --------
    >>> from sklcalib.benchmark.summary import terminal_summary
    >>> rows = [
    ...     {"dataset": "moons", "loss": loss, "seed": 0, "ece_pre": pre,
    ...      "ece_post": post, "error_pre": err, "chance_error": 0.5, "n_test": 400}
    ...     for loss, pre, post, err in [("ce", 0.05, 0.02, 0.1),
    ...                                  ("mmce", 0.01, 0.01, 0.5)]
    ... ]
    >>> print(terminal_summary(rows, width=80))  # doctest: +NORMALIZE_WHITESPACE
    Test ECE (%) before/after temperature scaling, mean over 1 seed(s).
    * lower after scaling than every other loss of the dataset (paired test, 5 %);
    ! a seed at or near chance; ^ a temperature at the grid's edge (neither ranked).
    <BLANKLINE>
    loss    moons
    ce      5.0/2.0
    mmce    1.0/1.0!
    <BLANKLINE>
    1 run(s) at or near chance (error close to always predicting the most
    frequent class; rule and runs in results.md):
      moons: 1 of 2 runs (mmce), error 50.0 %, majority class 50.0 %
    """
    stats = _aggregate(rows)
    chance = _chance_counts(rows)
    edges = _edge_counts(rows)
    best_of = _best_losses(rows, "post", excluded=set(chance) | set(edges))
    datasets = _ordered([r["dataset"] for r in rows], datasets or [])
    losses = _ordered([r["loss"] for r in rows], losses or [])
    n_seeds = len({r["seed"] for r in rows})

    lines = [
        f"Test ECE (%) before/after temperature scaling, mean over {n_seeds} seed(s).",
        "* lower after scaling than every other loss of the dataset (paired "
        "test, 5 %);",
        "! a seed at or near chance; ^ a temperature at the grid's edge "
        "(neither ranked).",
    ]
    cells = {}
    for ds in datasets:
        for loss in losses:
            if (ds, loss) not in stats:
                cells[ds, loss] = "-"
                continue
            s = stats[ds, loss]
            text = f"{100 * s['ece_pre'][0]:.1f}/{100 * s['ece_post'][0]:.1f}"
            if (ds, loss) in chance:
                text += "!"
            elif (ds, loss) in edges:
                text += "^"
            elif best_of.get(ds) == loss:
                text += "*"
            cells[ds, loss] = text

    first = max(len("loss"), *(len(loss) for loss in losses)) + 2
    widths = {
        ds: max(len(ds), *(len(cells[ds, loss]) for loss in losses)) + 2
        for ds in datasets
    }
    for block in _blocks(datasets, widths, width - first):
        lines.append("")
        lines.append("loss".ljust(first) + "".join(d.ljust(widths[d]) for d in block))
        for loss in losses:
            row = loss.ljust(first)
            row += "".join(cells[d, loss].ljust(widths[d]) for d in block)
            lines.append(row)

    flagged = _runs_at_chance(rows)
    if flagged:
        lines.append("")
        lines += textwrap.wrap(
            f"{len(flagged)} run(s) at or near chance (error close to always "
            "predicting the most frequent class; rule and runs in results.md):",
            width,
        )
        lines += _chance_lines(rows, flagged, datasets, losses, width)
    if run_dir is not None:
        lines += ["", where_written(run_dir, files, width)]
    return "\n".join(line.rstrip() for line in lines)


def where_written(run_dir, files=(), width=100):
    """The summary's last lines: where the full report and the files are.

    Parameters
    ----------
    run_dir : str or path-like
        The run's folder.
    files : sequence of str, default=()
        Names of the other files written there.
    width : int, default=100
        Longest line.

    Returns
    -------
    text : str
    """
    return "\n".join(
        textwrap.wrap(
            f"Full report (every metric, mean ± std): {run_dir}/results.md"
            + (f"; beside it: {', '.join(files)}." if files else "."),
            width,
            break_on_hyphens=False,
        )
    )


def _chance_lines(rows, flagged, datasets, losses, width):
    """One line per dataset with runs at chance: how many, of which losses,
    their errors against the majority class's."""
    lines = []
    for ds in datasets:
        mine = [r for r in flagged if r["dataset"] == ds]
        if not mine:
            continue
        n_runs = sum(r["dataset"] == ds for r in rows)
        names = [loss for loss in losses if any(r["loss"] == loss for r in mine)]
        which = (
            "every loss"
            if len(names) == len({r["loss"] for r in rows if r["dataset"] == ds})
            else ", ".join(names)
        )
        errors = [100 * r["error_pre"] for r in mine]
        span = (
            f"{min(errors):.1f} %"
            if max(errors) - min(errors) < 0.05
            else f"{min(errors):.1f}-{max(errors):.1f} %"
        )
        lines += textwrap.wrap(
            f"{ds}: {len(mine)} of {n_runs} runs ({which}), error {span}, "
            f"majority class {100 * mine[0]['chance_error']:.1f} %",
            width,
            initial_indent="  ",
            subsequent_indent="    ",
        )
    return lines[: 2 * _MAX_LISTED]


def _blocks(datasets, widths, room):
    """Split the datasets into consecutive groups whose columns fit ``room``."""
    blocks, current, used = [], [], 0
    for ds in datasets:
        if current and used + widths[ds] > room:
            blocks.append(current)
            current, used = [], 0
        current.append(ds)
        used += widths[ds]
    if current:
        blocks.append(current)
    return blocks


#: the terminal output stays within this many columns
_WIDTH = 100


@_fill_doc
def plain_text(markdown, width=_WIDTH):
    """Markdown tables as aligned plain columns, for a terminal.

    ``**bold**`` loses its stars and the ``| --- |`` rule goes; a table wider
    than ``width`` is split into blocks of columns, each repeating the first.
    Other lines are kept as they are.

    Parameters
    ----------
    markdown : str
        Text with pipe tables.
    width : int, default=100
        Longest line of a table.

    %(text_result_returns)s

    Examples
    --------
    >>> from sklcalib.benchmark.summary import plain_text
    >>> print(plain_text("| a | **b** |\\n| --- | --- |\\n| 1 | 22 |"))
    a   b
    1  22
    """
    out, table = [], []

    def flush():
        if not table:
            return
        rows = [[c.replace("**", "").strip() for c in r] for r in table]
        n = max(map(len, rows))
        rows = [r + [""] * (n - len(r)) for r in rows]
        widths = [max(len(r[j]) for r in rows) for j in range(n)]
        blocks, current, used = [], [], widths[0]
        for j in range(1, n):
            if current and used + 2 + widths[j] > width:
                blocks.append(current)
                current, used = [], widths[0]
            current.append(j)
            used += 2 + widths[j]
        blocks.append(current)
        for b, block in enumerate(blocks):
            if b:
                out.append("")
            for r in rows:
                cells = [r[0].ljust(widths[0])]
                cells += [r[j].rjust(widths[j]) for j in block]
                out.append("  ".join(cells).rstrip())
        table.clear()

    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            cells = stripped[1:-1].split("|")
            if not all(set(c.strip()) <= set("-: ") for c in cells):
                table.append(cells)
            continue
        flush()
        out.append(line.replace("**", ""))
    flush()
    return "\n".join(out)
