"""Segments of the rows: given as boolean masks, or built from feature
columns as mcgrad builds them.

From columns (a DataFrame, a 2-D array, or one 1-D column), a segment is a
combination of levels of up to ``max_depth`` distinct columns (depth 0 is
every row). A numeric column with more than ``max_levels`` distinct values
is cut into ``max_levels`` quantile bins (right-closed, the first also
holding its lower edge, edges deduplicated: ``pandas.cut`` of the quantiles
with ``include_lowest=True``); any other column keeps its ``max_levels - 1``
most frequent levels and collapses the others into ``"other"``; missing
values (None, NaN, ``pandas.NA``) form a level ``"missing"`` of their own.
Every combination with at least ``min_rows`` rows is kept; the others are
counted. The segments are held as a CSR structure (``indptr``, ``indices``:
the member rows of each segment in increasing order), so the memory is the
total membership, never segments x rows.
"""

import itertools
import sys
from typing import NamedTuple

import numpy as np

from ._validation import check_scalar

# total membership (rows x segments per row) above which the columns are
# refused: the audit holds one index per membership and resamples over them
_MAX_MEMBERSHIP = 1 << 28


class SegmentSet(NamedTuple):
    """The audited segments.

    ``indptr`` (S + 1,) and ``indices`` (nnz,): the member rows of segment
    ``s`` are ``indices[indptr[s]:indptr[s + 1]]``, increasing; ``names``
    (S,) readable descriptions; ``depths`` (S,) the number of columns
    combined (-1 for given masks); ``n_candidates``: the non-empty segments
    looked at; ``n_dropped``: those left out for having fewer than
    ``min_rows`` rows.
    """

    indptr: np.ndarray
    indices: np.ndarray
    names: list
    depths: np.ndarray
    n_candidates: int
    n_dropped: int

    @property
    def n_segments(self):
        return self.indptr.shape[0] - 1

    def sizes(self):
        """Rows of every segment."""
        return np.diff(self.indptr)

    def mask(self, s, n_rows):
        """Boolean mask of segment ``s`` over ``n_rows`` rows."""
        out = np.zeros(n_rows, dtype=bool)
        out[self.indices[self.indptr[s] : self.indptr[s + 1]]] = True
        return out


def is_dataframe(x):
    """Whether ``x`` is a DataFrame (pandas' or one that looks like it)."""
    return hasattr(x, "columns") and hasattr(x, "iloc") and hasattr(x, "dtypes")


def _is_series(x):
    return hasattr(x, "iloc") and hasattr(x, "name") and not hasattr(x, "columns")


def missing_mask(values):
    """Boolean mask of missing entries (None, NaN, ``pandas.NA``, NaT) of a
    1-D array."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind != "O":
        return np.zeros(values.shape[0], dtype=bool)
    pandas = sys.modules.get("pandas")  # pandas.NA exists only if it is loaded
    if pandas is not None:
        return np.asarray(pandas.isna(values), dtype=bool)
    return np.array([v is None or v != v for v in values], dtype=bool)


def _number(x):
    """``x`` to 4 significant digits, without an exponent between 1e-3 and
    1e9 (an income edge reads 19,460, not 1.946e+04)."""
    x = float(x)
    if x == 0 or not 1e-3 <= abs(x) < 1e9:
        return f"{x:.4g}"
    digits = 3 - int(np.floor(np.log10(abs(x))))
    rounded = round(x, digits)
    if digits <= 0:
        return f"{rounded:,.0f}"
    return f"{rounded:,.{digits}f}".rstrip("0").rstrip(".")


def _quantile_levels(values, present, max_levels):
    """Codes and names of quantile bins of a numeric column."""
    edges = np.unique(np.quantile(values[present], np.linspace(0, 1, max_levels + 1)))
    inner = edges[1:-1]
    codes = np.zeros(values.shape[0], dtype=np.int64)
    codes[present] = np.searchsorted(inner, values[present], side="left")
    names = []
    for b in range(max(edges.shape[0] - 1, 1)):
        low, high = edges[b], edges[min(b + 1, edges.shape[0] - 1)]
        bracket = "[" if b == 0 else "("
        names.append(f"{bracket}{_number(low)}, {_number(high)}]")
    return codes, names


def _category_levels(values, present, max_levels):
    """Codes and names of a categorical column: its ``max_levels - 1`` most
    frequent levels (ties in sorted order of the values, so that the order
    of the rows does not matter) and ``"other"``."""
    kept = values[present]
    try:
        uniques, first, inverse, counts = np.unique(
            kept, return_index=True, return_inverse=True, return_counts=True
        )
    except TypeError:  # mixed types: compare their text
        text = np.array([f"{type(v).__name__}:{v}" for v in kept], dtype=object)
        _, first, inverse, counts = np.unique(
            text, return_index=True, return_inverse=True, return_counts=True
        )
        uniques = kept[first]
    by_frequency = np.lexsort((np.arange(counts.shape[0]), -counts))
    if uniques.shape[0] > max_levels:
        top = by_frequency[: max_levels - 1]
        rank = np.full(uniques.shape[0], max_levels - 1, dtype=np.int64)
        rank[top] = np.arange(top.shape[0])
        names = [str(uniques[i]) for i in top] + ["other"]
    else:
        rank = np.empty(uniques.shape[0], dtype=np.int64)
        rank[by_frequency] = np.arange(uniques.shape[0])
        names = [str(uniques[i]) for i in by_frequency]
    codes = np.zeros(values.shape[0], dtype=np.int64)
    codes[present] = rank[inverse.ravel()]
    return codes, names


def column_levels(values, max_levels):
    """``(codes, names)`` of one column: ``codes`` (n,) int64 level of each
    row, ``names`` the level names (``"missing"`` last if any)."""
    values = np.asarray(values)
    if values.dtype.kind in "mM":  # datetimes: bin their ordinal
        values = values.astype("datetime64[ns]").astype(np.int64).astype(np.float64)
    missing = missing_mask(values)
    present = ~missing
    numeric = values.dtype.kind in "iuf"
    if not np.any(present):
        codes, names = np.zeros(values.shape[0], dtype=np.int64), []
    elif numeric and np.unique(values[present]).shape[0] > max_levels:
        codes, names = _quantile_levels(values.astype(np.float64), present, max_levels)
    else:
        codes, names = _category_levels(values, present, max_levels)
    if np.any(missing):
        codes[missing] = len(names)
        names = [*names, "missing"]
    return codes, names


def as_2d_segments(segments, accepted):
    """``segments`` as a 2-D numpy array (a 1-D one as its one column), or a
    ValueError listing the ``accepted`` forms."""
    x = np.asarray(segments)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(
            f"segments must be {accepted}; got an array of shape {x.shape}."
        )
    return x


def _as_array(segments, n_rows):
    x = as_2d_segments(
        segments,
        "a DataFrame, a 2-D array of columns (n_samples, n_columns), a 2-D "
        "boolean array of masks (n_samples, n_segments) or a dict of boolean "
        "masks",
    )
    if x.shape[0] != n_rows:
        raise ValueError(
            f"segments has {x.shape[0]} rows but y_true has {n_rows} "
            "(columns or masks go along the rows: shape (n_samples, ...))."
        )
    if x.shape[1] == 0:
        raise ValueError("segments has no columns.")
    return x


def _check_mask(mask, name, n_rows):
    m = np.asarray(mask)
    if m.dtype != bool:
        raise ValueError(
            f"segments[{name!r}] must be a boolean mask, got dtype {m.dtype}."
        )
    if m.shape != (n_rows,):
        raise ValueError(
            f"segments[{name!r}] has shape {m.shape}; a mask over the {n_rows} "
            "rows has shape ({n_rows},).".replace("{n_rows}", str(n_rows))
        )
    return m


def _from_masks(masks, names, min_rows):
    kept, kept_names, dropped = [], [], 0
    for m, name in zip(masks, names, strict=True):
        rows = np.flatnonzero(m)
        if rows.shape[0] >= min_rows:
            kept.append(rows)
            kept_names.append(name)
        else:
            dropped += 1
    return _pack(kept, kept_names, [-1] * len(kept), len(masks), dropped)


def _pack(members, names, depths, n_candidates, n_dropped):
    sizes = np.array([m.shape[0] for m in members], dtype=np.int64)
    indptr = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    indices = (
        np.concatenate(members).astype(np.intp)
        if members
        else np.zeros(0, dtype=np.intp)
    )
    return SegmentSet(
        indptr,
        indices,
        list(names),
        np.array(depths, dtype=np.int64),
        int(n_candidates),
        int(n_dropped),
    )


def _combinations(columns, max_depth, max_levels, min_rows, n_rows):
    levels = [column_levels(values, max_levels) for _, values in columns]
    col_names = [name for name, _ in columns]
    depth_max = min(max_depth, len(columns))
    per_row = sum(_n_choose(len(columns), d) for d in range(depth_max + 1))
    if per_row * n_rows > _MAX_MEMBERSHIP:
        raise ValueError(
            f"{len(columns)} segment columns combined up to depth {depth_max} "
            f"put every one of the {n_rows} rows in {per_row} segments, more "
            "than the audit holds in memory: lower max_depth or pass fewer "
            "columns."
        )
    members, names, depths = [np.arange(n_rows)], ["all rows"], [0]
    n_candidates, n_dropped = 1, 0
    if n_rows < min_rows:
        members, names, depths, n_dropped = [], [], [], 1
    for depth in range(1, depth_max + 1):
        for combo in itertools.combinations(range(len(columns)), depth):
            joint = np.zeros(n_rows, dtype=np.int64)
            for j in combo:
                joint = joint * (len(levels[j][1]) + 1) + levels[j][0]
            cells, inverse, counts = np.unique(
                joint, return_inverse=True, return_counts=True
            )
            n_candidates += cells.shape[0]
            order = np.argsort(inverse.ravel(), kind="stable")
            starts = np.concatenate([[0], np.cumsum(counts)])
            for c in range(cells.shape[0]):
                if counts[c] < min_rows:
                    n_dropped += 1
                    continue
                rows = order[starts[c] : starts[c + 1]]
                members.append(rows)
                first = rows[0]
                names.append(
                    " & ".join(
                        f"{col_names[j]}={levels[j][1][levels[j][0][first]]}"
                        for j in combo
                    )
                )
                depths.append(depth)
    return _pack(members, names, depths, n_candidates, n_dropped)


def _n_choose(n, k):
    out = 1
    for i in range(k):
        out = out * (n - i) // (i + 1)
    return out


def _source(segments, n_rows):
    """``("masks", [mask], [name])`` or ``("columns", [values], [name])``,
    every array checked to hold ``n_rows`` rows."""
    if isinstance(segments, dict):
        if not segments:
            raise ValueError("segments is an empty dict: no segment to audit.")
        masks = [_check_mask(m, k, n_rows) for k, m in segments.items()]
        return "masks", masks, [str(k) for k in segments]
    if is_dataframe(segments) or _is_series(segments):
        if segments.shape[0] != n_rows:
            raise ValueError(
                f"segments has {segments.shape[0]} rows but y_true has {n_rows}."
            )
        if _is_series(segments):
            name = segments.name if segments.name is not None else "x0"
            return "columns", [segments.to_numpy()], [str(name)]
        if segments.shape[1] == 0:
            raise ValueError("segments has no columns.")
        names = [str(c) for c in segments.columns]
        return (
            "columns",
            [segments.iloc[:, j].to_numpy() for j in range(len(names))],
            names,
        )
    if isinstance(segments, np.ndarray) and segments.dtype.names:
        # a structured array: its fields are the named columns
        if segments.ndim != 1 or segments.shape[0] != n_rows:
            raise ValueError(
                f"segments is a structured array of shape {segments.shape}; its "
                f"fields are the columns of the {n_rows} rows: shape ({n_rows},)."
            )
        names = list(segments.dtype.names)
        return "columns", [np.asarray(segments[c]) for c in names], names
    x = _as_array(segments, n_rows)
    if x.dtype == bool and np.ndim(segments) == 2:
        return "masks", list(x.T), [f"segment {j}" for j in range(x.shape[1])]
    return "columns", list(x.T), [f"x{j}" for j in range(x.shape[1])]


def build_segments(
    segments, n_rows, *, max_depth=2, max_levels=5, min_rows=30, keep=None
):
    """The :class:`SegmentSet` of ``segments`` over ``n_rows`` rows.

    ``segments``: a dict of name -> boolean mask (n_rows,) or a 2-D boolean
    array (n_rows, n_segments), audited as given; or a DataFrame, a pandas
    Series, a structured array (its fields are the columns), a 1-D array or a
    2-D array of columns (n_rows, n_columns), from which the segments are
    built (see the module docstring). ``keep``: a
    boolean mask of the rows to audit (the others, rows of weight 0, are no
    rows: the segments, their sizes and the quantile bins are those of the
    kept rows, which are renumbered from 0).
    """
    max_depth = check_scalar(max_depth, "max_depth", integer=True, low=0)
    max_levels = check_scalar(max_levels, "max_levels", integer=True, low=2)
    min_rows = check_scalar(min_rows, "min_rows", integer=True, low=1)
    kind, arrays, names = _source(segments, n_rows)
    if keep is not None and not np.all(keep):
        arrays = [a[keep] for a in arrays]
        n_rows = int(np.count_nonzero(keep))
    if kind == "masks":
        return _from_masks(arrays, names, min_rows)
    return _combinations(
        list(zip(names, arrays, strict=True)), max_depth, max_levels, min_rows, n_rows
    )
