"""Gradient boosting on the real tabular sets, raw and after post-hoc calibrators.

Tabular practitioners mostly calibrate boosted trees, not networks. For each
(dataset, seed), :func:`run_boosting` fits scikit-learn's
``HistGradientBoostingClassifier`` on the training split, fits every chosen
post-hoc calibrator on its scores on the validation split, and measures the
test split raw and after each calibrator. :mod:`sklcalib.benchmark.boosting_tables`
turns the rows into ``boosting.csv`` and the markdown tables of ``results.md``,
:mod:`sklcalib.benchmark.figures` into a reliability figure per dataset.

The seeds vary the train / validation / test split (``random_state=seed``) and
the booster's seed, so the spread over seeds shows how much the numbers move
with the draw of a test set of this size.
"""

import importlib.util
import math
import time

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.utils.metaestimators import available_if

from sklcalib import calibration, metrics
from sklcalib._utils._docstrings import fill_doc as _fill_doc
from sklcalib.benchmark.runner import METRICS
from sklcalib.benchmark.runner import PATIENCE as _PATIENCE
from sklcalib.benchmark.runner import derive_seed as _derive_seed
from sklcalib.benchmark.runner import subsample_train as _subsample_train
from sklcalib.datasets import load_dataset as _load_dataset

__all__ = [
    "CALIBRATORS",
    "MODELS",
    "RAW",
    "available_calibrators",
    "available_models",
    "make_calibrator",
    "make_model",
    "run_boosting",
]

#: the post-hoc calibrators the benchmark runs by default: names of
#: :data:`sklcalib.calibration.CALIBRATORS` (any other name of that registry
#: may be asked for) and ``"auto"``, the cross-validated choice among them,
#: "none" included. :class:`~sklcalib.calibration.CalibratedClassifier` gives
#: each the booster's decision scores or probabilities, whichever it takes.
CALIBRATORS = (
    "temperature",
    "isotonic",
    "histogram",
    "beta_netcal",
    "dirichlet",
    "ets",
    "scaling_binning",
    "venn_abers",
    # the leaders of public calibration benchmarks
    "sms",
    "svs",
    "quadratic",
    "beta",
    "spline",
    "auto",
)

#: base model name -> (constructor in this module, optional package it needs)
MODELS = {
    "hgb": ("_make_hgb", None),
    "logreg": ("_make_logreg", None),
    "net": ("_make_net", "skorch"),
    "lightgbm": ("_make_lightgbm", "lightgbm"),
}

#: the raw booster's row in the tables
RAW = "none"


@_fill_doc
def available_calibrators():
    """Names of :data:`CALIBRATORS` that this installation can run.

    A name is left out when the optional package its calibrator needs (netcal)
    is missing.

    %(available_names_returns)s

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import available_calibrators
    >>> available_calibrators()[:3]
    ['temperature', 'isotonic', 'histogram']
    """
    installed = set(calibration.available_calibrators())
    return [n for n in CALIBRATORS if n == "auto" or n in installed]


@_fill_doc
def available_models():
    """Names of :data:`MODELS` whose packages this installation has.

    %(available_names_returns)s

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import available_models
    >>> available_models()[:2]
    ['hgb', 'logreg']
    """
    return [
        name
        for name, (_, needs) in MODELS.items()
        if needs is None or importlib.util.find_spec(needs) is not None
    ]


def make_calibrator(name):
    """A fresh calibrator for a name of :data:`sklcalib.calibration.CALIBRATORS`,
    or ``"auto"`` (CalibratedClassifier's own cross-validated choice)."""
    if name == "auto":
        return name
    return calibration.get_calibrator(name)


def _make_hgb(data, seed, net_epochs):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=seed)


def _make_logreg(data, seed, net_epochs):
    from sklearn.linear_model import LogisticRegression

    # the features are standardised by the loaders; a cap on the iterations
    # that the one-hot encoded sets need
    return LogisticRegression(max_iter=2000)


def _make_net(data, seed, net_epochs):
    # torch and skorch (the "torch" extra) load with the net: only when asked
    from skorch.callbacks import EarlyStopping

    from sklcalib.net import NetClassifier  # the torch extra, as above

    # stopped early on NetClassifier's own validation split (a seeded,
    # stratified 20 % of the training rows; the dataset's validation split
    # stays the calibrators'), as the boosted trees stop on theirs: trained
    # for the whole budget it memorises the noise of these sets until its
    # test log-loss is worse than the prior's (see runner.PATIENCE)
    stop = EarlyStopping(patience=_PATIENCE, load_best=True)
    return NetClassifier(
        criterion="ce",
        max_epochs=net_epochs,
        random_state=seed,
        verbose=0,
        callbacks=[("early_stopping", stop)],
    )


def _make_lightgbm(data, seed, net_epochs):
    import lightgbm

    return lightgbm.LGBMClassifier(random_state=seed, n_jobs=1, verbose=-1)


def make_model(name, data, seed, *, net_epochs=100):
    """A fresh, unfitted base model for a name of :data:`MODELS`."""
    return globals()[MODELS[name][0]](data, seed, net_epochs)


def _row_log_loss(y, proba):
    """Per-row negative log-likelihood, clipped as the library's NLL is."""
    proba = np.asarray(proba, dtype=np.float64)
    p_true = proba[np.arange(len(y)), y]
    return -np.log(np.clip(p_true, np.finfo(np.float64).eps, 1.0))


def _paired_change(losses, raw_losses):
    """Relative change of the mean test log-loss against raw, with its 95 %
    normal interval from the per-row paired differences (the test rows' sampling
    error; the fitted model and calibrator are held fixed)."""
    diff = losses - raw_losses
    base = float(np.mean(raw_losses))
    se = float(np.std(diff, ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0
    mean = float(np.mean(diff))
    return mean / base, (mean - 1.96 * se) / base, (mean + 1.96 * se) / base, se / base


def run_boosting(
    dataset,
    seed,
    *,
    calibrators=("temperature", "isotonic", "histogram"),
    models=("hgb",),
    max_train=None,
    net_epochs=100,
    return_proba=False,
):
    """Fit each base model and each calibrator on one split; test metrics.

    Each base model (``"hgb"``: scikit-learn's ``HistGradientBoostingClassifier``
    with its defaults; ``"logreg"``: ``LogisticRegression``; ``"net"``: a
    cross-entropy :class:`~sklcalib.net.NetClassifier`; ``"lightgbm"`` when
    installed; seeds from :func:`~sklcalib.benchmark.runner.derive_seed`) is
    fitted on the training split of ``load_dataset(dataset, random_state=seed)``;
    each calibrator is fitted on the validation split through
    ``CalibratedClassifier(FrozenEstimator(model), calibrator)``; a binary-only
    calibrator (its ``multi_class`` tag off) is left out on a multiclass set,
    so that its cells stay empty. BLAS and
    OpenMP run on one thread, so parallel runs do not oversubscribe the cores.

    Parameters
    ----------
    dataset : str
        A name of :func:`sklcalib.datasets.list_datasets`.
    seed : int
        Seed of the split and of the models.
    calibrators : sequence of str
        Names of :data:`sklcalib.calibration.CALIBRATORS` or ``"auto"``.
    models : sequence of str, default=("hgb",)
        Names of :data:`MODELS`.
    max_train : int, default=None
        Fit the models on at most this many training rows (a stratified
        subsample); validation and test splits are whole.
    net_epochs : int, default=100
        Training epochs of the ``"net"`` model.
    return_proba : bool, default=False
        Also return the test labels and probabilities (keys ``"y_test"``,
        ``"proba"``) for reliability diagrams.

    Returns
    -------
    rows : list of dict
        Per model, one row for the raw model (``calibrator="none"``) and one
        per calibrator: ``dataset``, ``model``, ``calibrator``, ``seed``,
        ``n_train``, each of :data:`~sklcalib.benchmark.runner.METRICS` on the
        test split (``nll`` with every probability clipped at float64's
        epsilon, so that a float32 model and its calibrations compare alike),
        ``fit_seconds``, and the test log-loss relative to the raw
        model's (``nll_change``, a fraction; negative is better) with the 95 %
        interval of the per-row paired differences (``nll_change_low``,
        ``nll_change_high``, ``nll_change_se``), and against the prior, the
        training split's class frequencies predicted for every test row:
        its test log-loss ``prior_nll``, and the mean per-row log-loss
        difference to it (``nll_vs_prior``, negative is better) with its
        standard error (``nll_vs_prior_se``).

    Examples
    --------
    >>> from sklcalib.benchmark.tabular import run_boosting
    >>> rows = run_boosting("breast_cancer", 0, calibrators=["temperature"])
    >>> [r["calibrator"] for r in rows]
    ['none', 'temperature']
    >>> rows[0]["nll_change"]
    0.0
    """
    from threadpoolctl import threadpool_limits

    data = _subsample_train(_load_dataset(dataset, random_state=seed), max_train)
    rows = []

    # the prior: the training split's class frequencies for every test row,
    # the forecast of a model that learnt nothing; a model is worth
    # calibrating where its test log-loss is below the prior's
    prior = np.bincount(data.y_train, minlength=data.n_classes) / len(data.y_train)
    prior_losses = -np.log(np.clip(prior[data.y_test], np.finfo(np.float64).eps, 1))

    def add(model_name, name, proba, seconds, raw_losses):
        report = metrics.calibration_report(data.y_test, proba, confidence_level=None)
        losses = _row_log_loss(data.y_test, proba)
        change, low, high, se = _paired_change(losses, raw_losses)
        vs_prior = losses - prior_losses
        row = {
            "dataset": dataset,
            "model": model_name,
            "calibrator": name,
            "seed": int(seed),
            "n_train": len(data.y_train),
            **{key: float(report[key]) for key in METRICS},
            # the test log-loss from the same per-row losses as the paired
            # change: every column clipped at float64's epsilon. The report
            # clips at the epsilon of the probabilities' dtype, so a float32
            # model's row at 2.5e-16 cost 15.9 nats raw and 35.9 once a
            # calibrator (float64) passed it through unchanged (hpc/logreg,
            # seed 2: +0.023 for identical probabilities)
            "nll": float(np.mean(losses)),
            "nll_change": change,
            "nll_change_low": low,
            "nll_change_high": high,
            "nll_change_se": se,
            "prior_nll": float(np.mean(prior_losses)),
            "nll_vs_prior": float(np.mean(vs_prior)),
            "nll_vs_prior_se": float(
                np.std(vs_prior, ddof=1) / math.sqrt(len(vs_prior))
            ),
            "fit_seconds": seconds,
        }
        if return_proba:
            row["y_test"] = data.y_test
            row["proba"] = proba
        rows.append(row)
        return losses

    with threadpool_limits(1):
        for model_name in models:
            start = time.perf_counter()
            model = make_model(
                model_name,
                data,
                _derive_seed(f"{dataset}/{model_name}", seed)
                if model_name != "hgb"
                else _derive_seed(dataset, seed),
                net_epochs=net_epochs,
            ).fit(data.X_train, data.y_train)
            # kept in the model's dtype (float32 for the net): the metrics hold
            # each dtype to its own round-off
            raw = np.asarray(model.predict_proba(data.X_test))
            raw_losses = _row_log_loss(data.y_test, raw)
            add(model_name, RAW, raw, time.perf_counter() - start, raw_losses)
            frozen = _FrozenWithScores(model, {id(data.X_test): raw})
            for name in calibrators:
                if data.n_classes > 2 and not _handles_multiclass(name):
                    continue  # a binary method (quadratic, beta): no row, no cell
                calibrator = make_calibrator(name)
                start = time.perf_counter()
                # no harm check: it refits the calibrator cv more times (the
                # timing column would count them) and the table already says
                # whether a calibrator helped on the test split
                calibrated = calibration.CalibratedClassifier(
                    frozen, calibrator, check_calibration=False
                )
                calibrated.fit(data.X_val, data.y_val)
                proba = np.asarray(calibrated.predict_proba(data.X_test))
                add(model_name, name, proba, time.perf_counter() - start, raw_losses)
    return rows


class _FrozenWithScores(FrozenEstimator):
    """A ``FrozenEstimator`` that asks its model for the scores of an array once.

    Every calibrator of the table fits on the same validation array and
    predicts the same test array: computed once, a boosted model's scores are
    not recomputed for each of a dozen calibrators (on diamonds one call costs
    more than most calibrators' fits). Keyed by the array object (each entry
    keeps it alive, so its id is not reused); every call gets its own copy.
    ``known`` holds scores already computed, ``{id(X): predict_proba(X)}``.
    """

    def __init__(self, estimator, known=None):
        super().__init__(estimator)
        self.known = known

    def _scores(self, method, X):
        memo = self.__dict__.setdefault("_memo", {})
        key = (method, id(X))
        if key not in memo:
            if method == "predict_proba" and (self.known or {}).get(id(X)) is not None:
                memo[key] = (X, self.known[id(X)])
            else:
                memo[key] = (X, getattr(self.estimator, method)(X))
        held, scores = memo[key]
        if held is not X:  # an id reused by another object: not ours
            scores = getattr(self.estimator, method)(X)
        return np.array(scores, copy=True)

    @available_if(lambda self: hasattr(self.estimator, "predict_proba"))
    def predict_proba(self, X):
        """The model's ``predict_proba(X)``, computed once per array."""
        return self._scores("predict_proba", X)

    @available_if(lambda self: hasattr(self.estimator, "decision_function"))
    def decision_function(self, X):
        """The model's ``decision_function(X)``, computed once per array."""
        return self._scores("decision_function", X)


def _handles_multiclass(name):
    """Whether a calibrator name (or ``"auto"``) fits more than two classes."""
    return name == "auto" or calibration.calibrator_spec(name).applies_to(3)
