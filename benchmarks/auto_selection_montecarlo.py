"""Monte Carlo of ``select_calibrator``'s choices on models with a known answer.

Labels are drawn from a model's own probabilities (binary: logits N(0, 2²);
K classes: logits N(0, 1.5²) per class), so the raw scores are calibrated;
the over-confident case multiplies those logits by 2.5, so temperature scaling
with T = 2.5 is the truth. Two tables:

1. **Choices.** For each calibration-set size and seed the default candidates
   are compared with the default rule (one standard error of the paired fold
   differences) and with ``rule="best"``; for 10 and 20 classes also with
   *stratified* folds (``cv=StratifiedKFold(5, shuffle=True)``), the folds of
   earlier versions, which reward per-class intercepts fitted to the noise of
   the sample's class frequencies. The table gives how often each keeps
   "passthrough" (calibrated) or chooses temperature scaling (over-confident),
   and the mean excess test log-loss of the chosen calibrator over the truth
   on 20 000 fresh rows.
2. **Small and separable sets.** Sets a user can have and a cross-validation
   cannot judge: 20 calibrated classes on 200 rows (about 10 a class), and
   sharp models on a few dozen rows (a margin of 6 on the true class's logit:
   a test set has a few misclassified rows, the calibration set often none,
   where temperature scaling runs to T -> 0 with a cross-validated log-loss of
   0). The table gives how often ``select_calibrator`` raised, how often it
   kept the raw scores, the mean and largest excess of its test log-loss over
   the raw scores' on 20 000 fresh rows, and how many of its test
   probabilities were exactly 0 or 1.

Run: ``python benchmarks/auto_selection_montecarlo.py [n_seeds] [--rst]
[--jobs=N]`` (single-threaded numerics; ``--jobs=N`` runs the (bed, seed)
trials in N processes, with the same results; about 9 CPU-minutes for 40
seeds (510 CPU-seconds, single-threaded);
the output of that run is committed beside this script as
``auto_selection_montecarlo.md``; ``--rst`` prints the tables as the
post-hoc guide's list-tables).
"""

import os
import sys
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from scipy.special import softmax
from sklearn.model_selection import StratifiedKFold

from sklcalib.calibration import select_calibrator

CHOICE_HEADER = (
    "classes",
    "truth",
    "n",
    "rule",
    "keeps none",
    "temperature",
    "other",
    "excess test NLL",
    "which other",
)
SMALL_HEADER = (
    "bed",
    "classes",
    "n",
    "trials",
    "raised",
    "keeps none",
    "mean excess over raw",
    "largest excess over raw",
    "exact 0 or 1",
)


def _draw(n, k, rng, scale=None, margin=0.0):
    """Logits and labels drawn from their own softmax (binary: one margin)."""
    scale = (2.0 if k == 2 else 1.5) if scale is None else scale
    if k == 2 and margin == 0.0:
        logit = rng.normal(0.0, scale, size=n)
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
        return logit, y
    y = rng.integers(0, k, size=n) if margin else None
    z = rng.normal(0.0, scale, size=(n, k))
    if margin:  # a sharp model: the true class's logit raised by the margin
        z[np.arange(n), y] += margin
    p = softmax(z, axis=1)
    y = (p.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return z, y


def _true_proba(z):
    return softmax(np.column_stack([0 * z, z]) if z.ndim == 1 else z, axis=1)


def _nll(proba, y):
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], 1e-300, 1))))


def choice_beds():
    """The choices table's beds: (k, truth, factor, n, rule, folds)."""
    yield from (
        (k, truth, factor, n, rule, "default")
        for k in (2, 4)
        for truth, factor in (("calibrated", 1.0), ("over-confident", 2.5))
        for n in (300, 1000, 3000)
        for rule in ("one_se", "best")
    )
    yield from (
        (k, "calibrated", 1.0, n, "one_se", folds)
        for k in (10, 20)
        for n in (1000, 5000)
        for folds in ("default", "stratified")
    )


def choice_trial(bed, seed):
    """One seed of a choices bed: the chosen calibrator and its excess test
    log-loss over the truth."""
    k, _, factor, n, rule, folds = bed
    rng = np.random.default_rng(seed)
    z, y = _draw(n, k, rng)
    zt, yt = _draw(20_000, k, rng)
    cv = 5
    if folds == "stratified":
        cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    sel = select_calibrator(factor * z, y, response="logits", rule=rule, cv=cv)
    excess = _nll(sel.predict_proba(factor * zt), yt) - _nll(_true_proba(zt), yt)
    return sel.best_candidate_, excess


def _trials(trial, beds, n_seeds, jobs):
    """Every bed's list of ``trial(bed, seed)`` over ``n_seeds`` seeds, in
    order (``jobs`` > 1: the (bed, seed) trials in a process pool; each
    trial seeds its own generator, so the results are the same)."""
    tasks = [(bed, seed) for bed in beds for seed in range(n_seeds)]
    if jobs > 1:
        from multiprocessing import get_context

        with get_context("fork").Pool(jobs) as pool:
            results = pool.starmap(trial, tasks, chunksize=1)
    else:
        results = [trial(bed, seed) for bed, seed in tasks]
    for i, bed in enumerate(beds):
        yield bed, results[i * n_seeds : (i + 1) * n_seeds]


def choice_rows(n_seeds, beds=None, jobs=1):
    """Rows of the choices table (default: :func:`choice_beds`)."""
    beds = list(choice_beds() if beds is None else beds)
    for (k, truth, _, n, rule, folds), trials in _trials(
        choice_trial, beds, n_seeds, jobs
    ):
        counts = {"passthrough": 0, "temperature": 0, "other": 0}
        others = {}
        excess = []
        for name, lost in trials:
            key = name if name in counts else "other"
            if key == "other":
                others[name] = others.get(name, 0) + 1
            counts[key] += 1
            excess.append(lost)
        rule_text = rule if folds == "default" else f"{rule}, stratified folds"
        yield (
            str(k),
            truth,
            str(n),
            rule_text,
            f"{counts['passthrough']}/{n_seeds}",
            f"{counts['temperature']}/{n_seeds}",
            f"{counts['other']}/{n_seeds}",
            f"{np.mean(excess):.4f}",
            ", ".join(f"{c} {v}" for c, v in others.items()) or "-",
        )


def _signed(x):
    return f"{x:+.4f}" if abs(x) >= 5e-5 else "0.0000"


# the small-and-separable table's beds: (bed, k, n, margin,
# min_events_per_parameter); 0 turns the size rule and its separation guard
# off (as before they existed)
SMALL_BEDS = (
    ("calibrated, many classes", 20, 200, 0.0, 10),
    ("sharp (margin 6)", 3, 44, 6.0, 10),
    ("sharp (margin 6), size rule off", 3, 44, 6.0, 0),
    ("sharp (margin 6)", 3, 100, 6.0, 10),
    ("sharp (margin 6), size rule off", 3, 100, 6.0, 0),
    ("sharp (margin 6)", 2, 44, 6.0, 10),
    ("sharp (margin 6), size rule off", 2, 44, 6.0, 0),
)


def small_trial(bed, seed):
    """One seed of a small-and-separable bed: ``None`` where the selection
    raised, else whether it kept the raw scores, how many test
    probabilities are exactly 0 or 1 and the excess test log-loss over the
    raw scores."""
    _, k, n, margin, events = bed
    rng = np.random.default_rng(seed)
    z, y = _draw(n, k, rng, margin=margin)
    zt, yt = _draw(20_000, k, rng, margin=margin)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sel = select_calibrator(
                z, y, response="logits", min_events_per_parameter=events
            )
    except ValueError:
        return None
    proba = sel.predict_proba(zt)
    return (
        sel.best_candidate_ == "passthrough",
        int(np.sum((proba == 0) | (proba == 1))),
        _nll(proba, yt) - _nll(softmax(zt, axis=1), yt),
    )


def small_rows(n_seeds, beds=SMALL_BEDS, jobs=1):
    """Rows of the small-and-separable table."""
    for (bed, k, n, _, _), trials in _trials(small_trial, list(beds), n_seeds, jobs):
        done = [t for t in trials if t is not None]
        excess = [lost for _, _, lost in done]
        yield (
            bed,
            str(k),
            str(n),
            str(n_seeds),
            str(len(trials) - len(done)),
            f"{sum(kept for kept, _, _ in done)}/{n_seeds}",
            _signed(np.mean(excess)) if excess else "-",
            _signed(np.max(excess)) if excess else "-",
            str(sum(exact for _, exact, _ in done)),
        )


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def list_table(header, rows):
    """The rows as the post-hoc guide's reST list-table."""
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in [header, *rows]:
        for i, cell in enumerate(row):
            out.append(("   * - " if i == 0 else "     - ") + cell)
    return "\n".join(out)


def main(n_seeds=40, rst=False, jobs=1):
    tables = [
        (CHOICE_HEADER, list(choice_rows(n_seeds, jobs=jobs))),
        (SMALL_HEADER, list(small_rows(n_seeds, jobs=jobs))),
    ]
    render = list_table if rst else markdown
    print("\n\n".join(render(header, rows) for header, rows in tables))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    jobs = [int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--jobs=")]
    main(int(args[0]) if args else 40, rst="--rst" in sys.argv, jobs=max(jobs or [1]))
