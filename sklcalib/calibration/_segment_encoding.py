"""Segment columns (a DataFrame or a 2-D array) as numeric features for the
segment calibrators.

A categorical column becomes one indicator per level seen at fit with at
least ``min_frequency`` rows (at most ``max_levels`` of them, the most
frequent); a rarer level, a level never seen at fit and a missing value
(None, NaN, ``pandas.NA``) have no indicator of their own unless "missing"
was frequent at fit, so such a row gets the baseline of the column (all its
indicators 0). A numeric column with more than ``max_levels`` distinct values
is cut into ``n_bins`` quantile bins (one indicator each, missing as above);
the boosting calibrator also gets its raw value (NaN where missing: scikit-
learn's trees and LightGBM route missing values).

Pairs of columns with few levels also get one indicator per cell of the
pair seen at fit in at least ``min_frequency`` rows (the pairs of fewest
cells first, the product of their indicator counts, while their cells in
all stay within ``max_pair_cells``): an additive map of the columns'
indicators cannot express a correction that depends on two columns at once
(the crash table's seat belt and airbag), which trees find.
"""

import itertools
import sys

import numpy as np

from sklcalib._utils._segments import as_2d_segments, is_dataframe, missing_mask

#: the level that stands for a missing value
MISSING = "missing"


def segment_columns(segments, *, strings=False):
    """``(names, columns)``: the columns of ``segments`` as 1-D numpy arrays
    and their names (the DataFrame's, or ``x0, x1, ...``). With
    ``strings``, a column of pandas' string dtype is kept as its pandas
    array, for the fit's factorisation alone (pandas factorises its own
    strings without making a Python string of every row first)."""
    if is_dataframe(segments):
        names = [str(c) for c in segments.columns]
        columns = [
            _column_values(segments.iloc[:, j], strings)
            for j in range(segments.shape[1])
        ]
        return names, columns
    if hasattr(segments, "iloc") and hasattr(segments, "name"):  # a Series
        return [str(segments.name)], [np.asarray(segments)]
    x = as_2d_segments(segments, "a DataFrame or a 2-D array (n_samples, n_columns)")
    return [f"x{j}" for j in range(x.shape[1])], [x[:, j] for j in range(x.shape[1])]


def _column_values(column, strings):
    pandas = sys.modules.get("pandas")
    if strings and pandas is not None and isinstance(column.dtype, pandas.StringDtype):
        return column.array
    return np.asarray(column)


def _factorize(values):
    """``(row codes, distinct values)`` of an object column by pandas'
    hashing (code -1: missing, as ``missing_mask`` finds it), or None (not an
    object column, or no pandas)."""
    pandas = sys.modules.get("pandas")
    if values.dtype.kind != "O" or pandas is None:
        return None
    codes, distinct = pandas.factorize(values, use_na_sentinel=True)
    return codes.astype(np.int64), np.asarray(distinct, dtype=object)


def _as_float(values):
    """The column as float64 when it is numeric (or an object column of
    numbers), else None."""
    values = np.asarray(values)  # a pandas string array of the fit
    if values.dtype.kind in "iufb":
        return values.astype(np.float64)
    if values.dtype.kind == "O":
        missing = missing_mask(values)
        try:
            out = np.full(values.shape[0], np.nan)
            out[~missing] = values[~missing].astype(np.float64)
        except (TypeError, ValueError):
            return None
        return out
    return None


def _keys(values, numeric):
    """Comparable keys of the present values of a categorical column, as one
    numpy array (sorted and searched without Python loops): a number by its
    float value (an integer level matches the same level read as a float at
    predict), anything else by its text."""
    if numeric:
        return np.asarray(values, dtype=np.float64)
    return np.asarray(values).astype(str)


def _codes(keys, kept):
    """The position of each key among ``kept`` (-1 where absent)."""
    if len(kept) == 0 or keys.shape[0] == 0:
        return np.full(keys.shape[0], -1, dtype=np.int64)
    kept = np.asarray(kept)
    order = np.argsort(kept, kind="stable")
    ranked = kept[order]
    pos = np.clip(np.searchsorted(ranked, keys), 0, ranked.shape[0] - 1)
    return np.where(ranked[pos] == keys, order[pos], -1)


class SegmentEncoder:
    """Indicators (and raw numeric values) of segment columns, learnt at fit.

    Parameters
    ----------
    max_levels : int
        The most indicators of a categorical column, and the number of
        distinct values above which a numeric column is binned.
    n_bins : int
        Quantile bins of a numeric column.
    min_frequency : int
        Rows a level needs at fit for an indicator of its own.
    max_pair_cells : int, default=0
        The budget of pair cells (0: no pairs).
    """

    def __init__(self, max_levels, n_bins, min_frequency, max_pair_cells=0):
        self.max_levels = max_levels
        self.n_bins = n_bins
        self.min_frequency = min_frequency
        self.max_pair_cells = max_pair_cells

    def fit(self, segments, n_rows):
        self.fit_transform(segments, n_rows)
        return self

    def _fit_columns(self, names, columns, n_rows):
        self._check_rows(columns, n_rows)
        if not columns:
            raise ValueError("segments has no columns.")
        self.names_ = names
        self._fit_codes = []  # the fit rows' codes, for fit_transform
        self.specs_ = [self._fit_column(c) for c in columns]
        self.feature_names_ = [
            f"{name}={level}"
            for name, spec in zip(names, self.specs_, strict=True)
            for level in spec["levels"]
        ]
        self.n_main_ = len(self.feature_names_)
        self.pairs_ = []
        return self

    def _fit_pairs(self, codes):
        """The cells of each pair of columns kept (see the module's notes),
        from the fit rows' codes of every column."""
        widths = [len(spec["levels"]) for spec in self.specs_]
        pairs = [
            (i, j)
            for i, j in itertools.combinations(range(len(codes)), 2)
            if widths[i] >= 2 and widths[j] >= 2
        ]
        # the pairs of fewest cells first, while the cells stay in the budget
        pairs.sort(key=lambda ij: widths[ij[0]] * widths[ij[1]])
        budget = self.max_pair_cells
        for i, j in pairs:
            if widths[i] * widths[j] > budget:
                break
            budget -= widths[i] * widths[j]
            cell = _cells(codes[i], codes[j], widths[j])
            counts = np.bincount(cell[cell >= 0], minlength=widths[i] * widths[j])
            kept = np.flatnonzero(counts >= self.min_frequency)
            if kept.shape[0] == 0:
                continue
            self.pairs_.append((i, j, kept))
            li, lj = self.specs_[i]["levels"], self.specs_[j]["levels"]
            self.feature_names_ += [
                f"{self.names_[i]}={li[k // widths[j]]}&"
                f"{self.names_[j]}={lj[k % widths[j]]}"
                for k in kept
            ]

    @staticmethod
    def _check_rows(columns, n_rows):
        for c in columns:
            if c.shape[0] != n_rows:
                raise ValueError(
                    f"segments has {c.shape[0]} rows but scores has {n_rows}; "
                    "give one row of segment columns per row of scores."
                )

    def _fit_column(self, values):
        factorized = _factorize(values)
        if factorized is None:
            missing = missing_mask(values)
            numeric = _as_float(values)
        else:  # the few distinct values parsed and compared, not every row
            row_code, seen = factorized
            missing = row_code < 0
            numeric = _as_float(seen)
            if numeric is not None:
                numeric = np.where(missing, np.nan, numeric[np.maximum(row_code, 0)])
        present = ~missing
        if numeric is not None and not np.all(np.isfinite(numeric[present])):
            raise ValueError(
                "segments holds an infinite value; segment columns must be "
                "finite numbers, categories or missing values."
            )
        frequent_missing = int(missing.sum()) >= self.min_frequency
        if numeric is not None:
            distinct = np.unique(numeric[present])
            if distinct.shape[0] > self.max_levels:
                edges = np.unique(
                    np.quantile(numeric[present], np.linspace(0, 1, self.n_bins + 1))
                )[1:-1]
                levels = [f"bin{b}" for b in range(edges.shape[0] + 1)]
                if frequent_missing:
                    levels.append(MISSING)
                return {"kind": "numeric", "edges": edges, "levels": levels}
        if factorized is None:
            keys = _keys(values[present], numeric is not None)
            uniques, inverse, counts = np.unique(
                keys, return_inverse=True, return_counts=True
            )
        else:
            keys = _keys(seen, numeric is not None)
            uniques, of_distinct = np.unique(keys, return_inverse=True)
            inverse = of_distinct.ravel()[row_code[present]]
            counts = np.bincount(inverse, minlength=uniques.shape[0])
        order = np.lexsort((uniques, -counts))
        chosen = [
            i for i in order[: self.max_levels] if counts[i] >= self.min_frequency
        ]
        kept = [uniques[i] for i in chosen]
        code_of_unique = np.full(uniques.shape[0], -1, dtype=np.int64)
        code_of_unique[chosen] = np.arange(len(chosen))
        self._fit_codes.append((values, code_of_unique[inverse.ravel()], missing))
        levels = [f"{k:g}" if numeric is not None else str(k) for k in kept]
        if frequent_missing:
            levels.append(MISSING)
        return {
            "kind": "categorical",
            "numeric": numeric is not None,
            "keys": kept,
            "levels": levels,
        }

    def _known_codes(self, values):
        """``(codes, missing)`` found at fit, when ``values`` is the very
        column fitted (``fit_transform``): the text keys are not built and
        searched again; else None."""
        for fitted, codes, missing in getattr(self, "_fit_codes", ()):
            if fitted is values:
                return codes, missing
        return None

    def fit_transform(self, segments, n_rows):
        """``fit`` then ``transform(raw=True)`` of the same rows."""
        names, columns = segment_columns(segments, strings=True)
        try:
            self._fit_columns(names, columns, n_rows)
            if self.max_pair_cells:
                self._fit_pairs(self._column_codes(columns))
            return self._transform_columns(columns, n_rows, raw=True)
        finally:
            self._fit_codes = []

    def transform(self, segments, n_rows, *, raw=False):
        """(n, n_features) float64 indicators (the columns' levels, then the
        pairs' cells); with ``raw``, the numeric columns' values (NaN where
        missing) appended, and the list of the numeric columns' positions
        among them."""
        return self._transform_columns(segment_columns(segments)[1], n_rows, raw=raw)

    def _column_codes(self, columns):
        """Per column, the position of each row's indicator in its block
        (-1: the column's baseline, no indicator)."""
        out = []
        for values, spec in zip(columns, self.specs_, strict=True):
            known = self._known_codes(values)
            missing = missing_mask(values) if known is None else known[1]
            codes = np.full(values.shape[0], -1, dtype=np.int64)
            if spec["kind"] == "numeric":
                numeric = _as_float(values)
                if numeric is None:
                    raise ValueError(
                        "a segment column that was numeric at fit holds "
                        "non-numeric values at predict."
                    )
                if np.any(np.isinf(numeric)):
                    raise ValueError("segments holds an infinite value.")
                present = ~np.isnan(numeric)
                codes[present] = np.searchsorted(
                    spec["edges"], numeric[present], side="left"
                )
            else:
                present = ~missing
                if known is None:
                    numeric = spec["numeric"] and _as_float(values) is not None
                    keys = _keys(values[present], numeric)
                    kept = spec["keys"]
                    if spec["numeric"] != numeric:  # numbers at fit, text now
                        kept = [f"{k:g}" for k in kept]
                    codes[present] = _codes(keys, kept)
                else:
                    codes[present] = known[0]
            if spec["levels"] and spec["levels"][-1] == MISSING:
                codes[~present] = len(spec["levels"]) - 1
            out.append(codes)
        return out

    def _transform_columns(self, columns, n_rows, *, raw):
        self._check_rows(columns, n_rows)
        if len(columns) != len(self.specs_):
            raise ValueError(
                f"segments has {len(columns)} columns; the calibrator was fitted "
                f"on {len(self.specs_)} ({', '.join(self.names_)})."
            )
        # one output, filled in place: a column block of indicators per
        # segment column, a block per pair, then (raw) the numeric columns'
        # values
        widths = [len(spec["levels"]) for spec in self.specs_]
        n_ind = len(self.feature_names_)
        numeric_cols = [
            j for j, spec in enumerate(self.specs_) if spec["kind"] == "numeric"
        ]
        n_raw = len(numeric_cols) if raw else 0
        n_out = n_ind + n_raw
        out = np.zeros((n_rows, n_out))
        # the indicators set through flat positions of the C-ordered output
        # (row * n_out + column): a 2-D fancy assignment costs twice as much
        flat = out.reshape(-1)
        row_start = np.arange(n_rows) * n_out
        codes = self._column_codes(columns)
        start = 0
        for code, width in zip(codes, widths, strict=True):
            rows = np.flatnonzero(code >= 0)
            flat[row_start[rows] + (start + code[rows])] = 1.0
            start += width
        for i, j, kept in getattr(self, "pairs_", ()):
            cell = _cells(codes[i], codes[j], widths[j])
            pos = np.full(widths[i] * widths[j], -1, dtype=np.int64)
            pos[kept] = np.arange(kept.shape[0])
            rows = np.flatnonzero(cell >= 0)
            at = pos[cell[rows]]
            hit = at >= 0
            flat[row_start[rows[hit]] + (start + at[hit])] = 1.0
            start += kept.shape[0]
        if not raw:
            return out
        for k, j in enumerate(numeric_cols):
            out[:, n_ind + k] = _as_float(columns[j])
        return out, list(range(n_ind, out.shape[1]))


def _cells(a, b, width_b):
    """The cell of each row in a pair of columns' codes (-1 where either
    column is at its baseline)."""
    return np.where((a >= 0) & (b >= 0), a * width_b + b, -1)
