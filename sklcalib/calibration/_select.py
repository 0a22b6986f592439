"""Choosing a calibrator by cross-validated log-loss, "no calibration" included.

One estimator, :class:`CalibratorSearchCV`, holds the rule; the function
:func:`select_calibrator`, ``CalibratedClassifier(calibrator="auto")`` and the
harm check of an explicitly chosen calibrator (:func:`check_calibrator`,
``CalibratedClassifier(check_calibration=...)``) are built on it.

The rule (:class:`CalibratorSearchCV` documents it for users):

1. every candidate, "passthrough" (no calibration) included, is fitted on the
   training folds of the calibration scores and scored on the held-out fold:
   log-loss, Brier score and 15-bin ECE. An integer ``cv`` is shuffled k-fold,
   *not* stratified: stratified folds give every held-out fold the class
   frequencies of its training folds, which rewards per-class intercepts
   fitted to the noise of the sample's class frequencies;
2. candidates with too few events for their flexibility are not evaluated
   (``min_events_per_parameter`` events per parameter per class, the "ten
   events per variable" rule of thumb of logistic regression). The events are
   the rarer side of each split the calibrator learns: the smallest class, and
   the rows the scores rank on the wrong side (misclassified rows; for two
   classes, the fewest rows any threshold misclassifies). Scores that separate
   the classes (no such row) let a calibrator push probabilities to 0 and 1
   with a cross-validated log-loss of 0: that is the separation guard;
3. the best candidate ``b`` has the lowest mean fold log-loss; ``c`` is
   *within one standard error* of it when the mean of the paired fold
   differences ``L_c,f - L_b,f`` is at most their standard error;
4. the simplest candidate within one standard error is chosen (fewest
   parameters; "passthrough" has none);
5. do no harm: a calibrator so chosen replaces the raw scores only when its
   held-out log-loss beats theirs by more than one standard error of the
   per-row paired differences (every held-out row once; ``n - 1`` degrees
   of freedom where the fold differences have ``folds - 1``), else
   "passthrough" is kept: a gain that a few rows carry is noise.

A set too small to evaluate any candidate keeps "passthrough" and says why
(``reason_``); nothing valid raises. A row of probabilities with a value
within the machine epsilon of 0 or 1 is floored at the epsilon (and
renormalised) where it is scored and where it is returned, so no probability
is exactly 0 or 1; other rows are left as they are.
"""

import functools
import math
import warnings

import numpy as np
from scipy.stats import t as student_t
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import KFold, check_cv
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
)

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._validation import (
    _outside_stacklevel,
    as_numpy,
    check_option,
    check_scalar,
)
from sklcalib.metrics import expected_calibration_error

from ._base import LOGITS, PROBABILITIES
from ._composed import (
    PriorThen,
    as_probabilities,
    fit_on_classes,
    logits_of,
)
from ._isotonic_folds import isotonic_fold_proba
from ._prior import PriorCorrection
from ._registry import (
    CALIBRATORS,
    PASSTHROUGH,
    canonical_name,
    needs_logits,
    spec_of,
)
from ._score_inputs import validate_fit_inputs, validate_scores

#: the row of the prior correction alone (``prior=`` given)
PRIOR = "prior"

_EPS = np.finfo(np.float64).eps

#: select_calibrator with segment columns; set by the module of
#: SegmentCalibrator (which builds on this one, so this one cannot import it)
_segment_selection = None


class CalibrationWarning(UserWarning):
    """A calibrator that is likely to make the probabilities worse.

    Issued by :class:`CalibratedClassifier` (``check_calibration``),
    :func:`check_calibrator` and ``sklcalib report --calibrate`` when a
    calibrator's cross-validated log-loss on its own calibration data is
    worse than that of the uncalibrated scores (by more than the two-sided
    95 % Student quantile, folds - 1 degrees of freedom, times the standard
    error of the paired fold differences, and by more than 1 % of the raw
    log-loss), when a :class:`PriorCorrection` makes them worse by the same
    rule, or when the calibration set is small for the calibrator's
    flexibility (fewer rows in the smallest class than 10 per parameter per
    class; isotonic regression, Venn–ABERS, BBQ and ENIR count as 20
    parameters per class, Dirichlet and matrix scaling as K + 1, vector
    scaling as 2). Filter it with
    ``warnings.filterwarnings("ignore", category=CalibrationWarning)``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklcalib.calibration import (
    ...     CalibrationWarning, IsotonicCalibrator, check_calibrator)
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=60)
    >>> y = (rng.uniform(size=60) < p).astype(int)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = check_calibrator(IsotonicCalibrator(), p, y)
    >>> caught[0].category is CalibrationWarning
    True
    """


# ----------------------------------------------------------------------------
# the candidates
# ----------------------------------------------------------------------------
def default_candidates(n_classes):
    """Names of the default candidates for a problem with ``n_classes``
    classes that this installation has, in the order of the registry."""
    return [
        name
        for name, spec in CALIBRATORS.items()
        if spec.available and spec.is_candidate(n_classes)
    ]


def parameters_per_class(calibrator, n_classes):
    """Parameters per class that the size rule counts for ``calibrator``
    (an instance or a registry name); None when unknown."""
    if isinstance(calibrator, str):
        if calibrator == PASSTHROUGH:
            return 0
        return CALIBRATORS[canonical_name(calibrator)].n_parameters(n_classes)
    spec = spec_of(calibrator)
    return None if spec is None else spec.n_parameters(n_classes)


def _is_passthrough(candidate):
    return isinstance(candidate, str) and candidate == PASSTHROUGH


def _is_prior(candidate):
    return isinstance(candidate, str) and candidate == PRIOR


def _candidate_name(candidate):
    return candidate if isinstance(candidate, str) else type(candidate).__name__


def _make_candidate(candidate):
    """A fresh calibrator for a candidate (a name or an instance)."""
    if not isinstance(candidate, str):
        return clone(candidate)
    return CALIBRATORS[candidate].estimator()


def _is_plain_isotonic(candidate):
    """Whether a candidate is isotonic regression with nothing in front."""
    isotonic = CALIBRATORS["isotonic"].estimator
    if isinstance(candidate, str):
        spec = CALIBRATORS.get(candidate)
        return spec is not None and spec.estimator is isotonic
    return type(candidate) is isotonic


def _check_candidates(candidates, n_classes):
    """The candidates as registry names (aliases resolved) or instances."""
    if candidates is None:
        return [PASSTHROUGH, *default_candidates(n_classes)]
    if isinstance(candidates, str) or not hasattr(candidates, "__iter__"):
        raise ValueError(
            "candidates must be a list of names and/or calibrator instances; "
            f"got {candidates!r}."
        )
    out = []
    for c in candidates:
        if isinstance(c, str):
            if c != PASSTHROUGH:
                c = canonical_name(c, "candidates")
                if not CALIBRATORS[c].applies_to(n_classes):
                    raise ValueError(
                        f"candidates: {c!r} is for binary problems; y has "
                        f"{n_classes} classes."
                    )
        elif not (hasattr(c, "fit") and hasattr(c, "predict_proba")):
            raise ValueError(
                "candidates must be names or calibrators with fit and "
                f"predict_proba; got {c!r}."
            )
        out.append(c)
    names = [_candidate_name(c) for c in out]
    if len(set(names)) != len(names):
        raise ValueError(f"candidates: names must be distinct; got {names}.")
    if not out:
        raise ValueError("candidates must not be empty.")
    return out


# ----------------------------------------------------------------------------
# the scores, in the forms the candidates take
# ----------------------------------------------------------------------------
class _Inputs:
    """The calibration scores in the forms the candidates take.

    ``logits``: what a logit calibrator is fitted on (a 1-D margin for binary
    problems, else (n, K)); ``probabilities``: (n, K) probabilities for the
    probability calibrators; ``passthrough``: the (n, K) uncalibrated
    probabilities (None where there are none: an estimator without
    ``predict_proba``).
    """

    def __init__(self, logits, probabilities, passthrough):
        self.logits = logits
        self.probabilities = probabilities
        self.passthrough = passthrough

    @classmethod
    def from_scores(cls, scores, response):
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if response == PROBABILITIES:
            proba = as_probabilities(scores, PROBABILITIES)
            return cls(logits_of(proba), proba, proba)
        proba = as_probabilities(scores, LOGITS)
        return cls(scores, proba, proba)

    def take(self, calibrator, rows=slice(None)):
        data = self.logits if needs_logits(calibrator) else self.probabilities
        return data[rows]


def floor_probabilities(proba):
    """Probabilities with no value exactly 0 or 1: a row holding a value
    within the machine epsilon of 0 or 1 is floored at the epsilon and
    renormalised (a log-loss costs at most 36 nats a row); the other rows
    are returned as they are, so that the raw scores kept as "passthrough"
    are the model's own probabilities (renormalising every row moved a
    float32 model's probabilities by round-off, which a paired comparison
    of many rows then called a significant difference)."""
    proba = np.array(proba, dtype=np.float64)
    rows = np.any((proba < _EPS) | (proba > 1.0 - _EPS), axis=1)
    if rows.any():
        floored = np.maximum(proba[rows], _EPS)
        proba[rows] = floored / floored.sum(axis=1, keepdims=True)
    return proba


def _row_log_loss(y_idx, proba):
    return -np.log(floor_probabilities(proba)[np.arange(len(y_idx)), y_idx])


def _fold_scores(y_idx, proba, w, n_classes, metrics):
    """The fold's weighted log-loss (and Brier score and 15-bin ECE when
    ``metrics`` asks for them) of floored probabilities."""
    return _fold_and_row_scores(y_idx, proba, w, n_classes, metrics)[0]


def _fold_and_row_scores(y_idx, proba, w, n_classes, metrics):
    """:func:`_fold_scores` and the rows' log-losses, of one flooring."""
    proba = floor_probabilities(proba)
    rows = np.arange(len(y_idx))
    losses = -np.log(proba[rows, y_idx])
    out = {"log_loss": float(np.average(losses, weights=w))}
    if "brier" in metrics:
        onehot = np.zeros_like(proba)
        onehot[rows, y_idx] = 1.0
        brier = ((proba - onehot) ** 2).sum(axis=1)
        out["brier"] = float(np.average(brier, weights=w))
    if "ece" in metrics:
        out["ece"] = float(
            expected_calibration_error(
                y_idx, proba, labels=np.arange(n_classes), sample_weight=w
            )
        )
    return out, losses


def _events(inputs, y_idx, n_classes, w=None):
    """The events of the size rule: the smallest class, and the rows the
    uncalibrated scores rank on the wrong side (misclassified rows; for two
    classes, the fewest rows any threshold on the score misclassifies).
    Weighted rows count their weight (a weight of 2 is the row twice)."""
    w = np.ones(len(y_idx)) if w is None else w
    counts = np.bincount(y_idx, weights=w, minlength=n_classes)
    proba = inputs.probabilities
    if n_classes == 2:
        # misclassified by a threshold between consecutive distinct scores
        order = np.argsort(proba[:, 1], kind="stable")
        s, yy, ww = proba[order, 1], y_idx[order], w[order]
        pos_below = np.concatenate([[0.0], np.cumsum(ww * (yy == 1))])
        neg_above = counts[0] - np.concatenate([[0.0], np.cumsum(ww * (yy == 0))])
        ends = np.concatenate([[0], np.flatnonzero(np.diff(s) > 0) + 1, [len(s)]])
        overlap = float(np.min(pos_below[ends] + neg_above[ends]))
    else:
        overlap = float(np.sum(w[np.argmax(proba, axis=1) != y_idx]))
    return min(float(counts.min()), overlap)


# ----------------------------------------------------------------------------
# the folds
# ----------------------------------------------------------------------------
def _check_cv_param(cv):
    if isinstance(cv, bool) or cv is None:
        raise ValueError(f"cv must be an integer >= 2 or a splitter; got {cv!r}.")
    if isinstance(cv, int | np.integer):
        check_scalar(cv, "cv", integer=True, low=2)


def _splits(cv, y_idx, random_state, groups):
    """The selection's folds: shuffled (unstratified) k-fold for an integer
    ``cv``; a splitter's or an iterable's splits otherwise."""
    n = len(y_idx)
    if isinstance(cv, int | np.integer):
        n_splits = min(int(cv), n)
        if n_splits < 2:
            return []
        splitter = KFold(n_splits=n_splits, shuffle=True, random_state=random_state)
        return list(splitter.split(np.zeros((n, 1))))
    splitter = check_cv(cv, y_idx, classifier=True)
    kwargs = {} if groups is None else {"groups": groups}
    splits = list(splitter.split(np.zeros((n, 1)), y_idx, **kwargs))
    if len(splits) < 2:
        raise ValueError(f"cv must give at least 2 splits; got {len(splits)}.")
    return splits


# ----------------------------------------------------------------------------
# the harm rule
# ----------------------------------------------------------------------------
@functools.lru_cache
def _student_quantile(df):
    """The two-sided 95 % Student quantile with ``df`` degrees of freedom,
    computed once per ``df`` (scipy's ``ppf`` costs about half a
    millisecond, a tenth of a harm check)."""
    return float(student_t.ppf(0.975, df))


def harm_message(what, cal_losses, raw_losses, *, jackknife=False):
    """The message of a CalibrationWarning when ``cal_losses`` (fold
    log-losses of a calibrator) are worse than ``raw_losses`` (those of the
    raw scores) beyond the fold noise and by a margin that matters; None
    otherwise.

    The noise: the two-sided 95 % Student quantile with folds - 1 degrees of
    freedom times the standard error of the paired fold differences (2.78
    for 5 folds: a flat 2 let temperature scaling of a calibrated logistic
    regression on 300 rows warn in 14 % of fits). With ``jackknife`` the
    folds' losses are leave-one-out replicates (on each part, the average of
    the calibrators fitted on the other parts): they share calibrators, so
    their differences vary ``folds - 1`` times less than independent folds'
    would, and the jackknife standard error is that much larger. The
    margin: 1 % of the raw log-loss.
    """
    cal = np.asarray(cal_losses, dtype=np.float64)
    raw = np.asarray(raw_losses, dtype=np.float64)
    d = cal - raw
    if len(d) < 2 or not np.all(np.isfinite(d)):
        return None
    se = float(d.std(ddof=1) / math.sqrt(len(d)))
    where = f"its {len(d)}-fold cross-validated log-loss"
    if jackknife:
        se *= len(d) - 1
        where = (
            f"its log-loss on the {len(d)} held-out parts (each scored by the "
            "calibrators fitted on the other parts)"
        )
    margin = max(_student_quantile(len(d) - 1) * se, 0.01 * raw.mean())
    if d.mean() <= margin:
        return None
    return (
        f"{what} makes the probabilities worse on its own calibration data: "
        f"{where} is {cal.mean():.4f} against {raw.mean():.4f} for the raw "
        f"scores (+{d.mean():.4f} ± {se:.4f})."
    )


def _warn_harm(what, cal_losses, raw_losses, advice, **kwargs):
    message = harm_message(what, cal_losses, raw_losses, **kwargs)
    if message is None:
        return None
    message = f"{message} {advice}"
    warnings.warn(message, CalibrationWarning, stacklevel=_outside_stacklevel())
    return message


_CALIBRATOR_ADVICE = (
    'Consider a simpler calibrator, more calibration data, or calibrator="auto".'
)
_PRIOR_ADVICE = (
    "Check the training prior it assumes (class weights, resampling) against "
    'the data, or let calibrator="auto" compare it with the raw scores.'
)


def calibration_size_warning(
    calibrator, y, *, min_events_per_parameter=10, parts=None, sample_weight=None
):
    """Warn (CalibrationWarning) when ``y`` is small for the calibrator's
    flexibility; return the message or None. ``parts``: the index arrays of
    the calibration parts when each part fits its own calibrator (ensemble
    mode): the smallest class of the smallest part counts. Weighted rows
    count their weight."""
    y = np.ravel(y)
    classes, y_idx = np.unique(y, return_inverse=True)
    m = parameters_per_class(calibrator, len(classes))
    if m is None:
        return None
    needed = math.ceil(min_events_per_parameter * m)
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)

    def smallest_class(rows):
        counts = np.bincount(y_idx[rows], weights=w[rows], minlength=len(classes))
        return float(counts[counts > 0].min())

    if parts is None:
        smallest = smallest_class(slice(None))
        where = f"the calibration set's smallest class has {smallest:g} rows"
    else:
        smallest = min(smallest_class(p) for p in parts)
        where = (
            "each calibrator is fitted on one held-out part, whose smallest "
            f"class has as few as {smallest:g} rows"
        )
    if smallest >= needed:
        return None
    message = (
        f"{type(calibrator).__name__} has about {m} parameter(s) per class; "
        f"{where}, fewer than "
        f"the {needed} ({min_events_per_parameter:g} per parameter) it needs to "
        "fit them reliably. Its probabilities may be worse than the raw scores: "
        'use a simpler calibrator (temperature, Platt) or calibrator="auto".'
    )
    warnings.warn(message, CalibrationWarning, stacklevel=_outside_stacklevel())
    return message


# ----------------------------------------------------------------------------
# the estimator
# ----------------------------------------------------------------------------
def _deprecated_alias(old, new):
    """A property ``old`` that warns (see ``_deprecated``) and returns ``new``."""

    def get(self):
        self._deprecated(old, new)
        return getattr(self, new)

    return property(get, doc=f"Deprecated: use ``{new}``.")


class CalibratorSearchCV(ClassifierMixin, BaseEstimator):
    """Choose a post-hoc calibrator by cross-validated log-loss, "none" included.

    The calibrator counterpart of ``GridSearchCV``: ``fit`` scores every
    candidate, ``"passthrough"`` (no calibration) among them, by ``cv``-fold
    cross-validated log-loss on held-out scores of a classifier, refits the
    chosen one on all of them (``best_estimator_``), and ``predict_proba``
    calibrates new scores with it; ``cv_results_`` holds the evidence. It is
    cloneable and searchable like any estimator.
    :func:`select_calibrator` is this estimator fitted in one call, and
    ``CalibratedClassifier(calibrator="auto")`` runs it on the held-out
    scores of its estimator.

    **Do no harm.** With the default ``rule="one_se"``, the chosen candidate
    is the simplest one whose mean fold log-loss is within one standard
    error of the best, the standard error being that of the paired fold
    differences to the best candidate (``sd / sqrt(n_folds)``, ``ddof=1``);
    "passthrough" has no parameters, so it is kept unless a calibrator beats
    it by more than the fold-to-fold noise of the difference. A calibrator
    so chosen must also beat "passthrough" by more than one standard error
    of the per-row paired differences of the held-out log-losses (``n - 1``
    degrees of freedom where five folds give four); else the raw scores are
    kept: a gain that a few rows carry is noise (on the 262 validation rows
    of a network on titanic, quadratic scaling gained 1.5 fold standard
    errors but 0.76 row standard errors, and lost 0.022 nats on the test
    split). Flexible
    candidates are not evaluated on few events: a candidate with ``m``
    parameters per class needs ``min_events_per_parameter * m`` events, the
    events being the smallest class and the rows the raw scores put on the
    wrong side (misclassified rows; for two classes, the fewest rows any
    threshold misclassifies) — scores that separate the classes would let
    a calibrator push probabilities to 0 and 1 with a cross-validated
    log-loss of 0 (temperature scaling runs to T ≈ 0), and the first
    misclassified test row would cost the whole gain. A calibration set too
    small for every candidate keeps "passthrough", with the reason in
    ``reason_``: a valid set never raises. A row of probabilities with a
    value within the machine epsilon of 0 or 1 is floored at the epsilon
    (renormalised) where it is scored and returned, so none is exactly 0 or
    1; the other rows are left as they are ("passthrough" returns the raw
    probabilities).

    Parameters
    ----------
    candidates : list of str or calibrator, default=None
        Names of :data:`~sklcalib.calibration.CALIBRATORS` (aliases such as
        ``"sigmoid"`` accepted) and ``"passthrough"``, or calibrator
        instances (cloned; named by their class). None: "passthrough" and
        every registry candidate that applies to the problem (binary or
        multiclass) and whose optional package is installed.
    cv : int, cross-validation generator or iterable, default=5
        Folds of the calibration scores. An integer is shuffled k-fold
        (``KFold(cv, shuffle=True, random_state=random_state)``), on purpose
        not stratified: stratified folds give each held-out fold the class
        frequencies of its training folds, rewarding per-class intercepts
        fitted to the noise of the sample's frequencies. A splitter (such
        as ``GroupKFold``, with ``groups`` given to ``fit``) or an iterable
        of ``(train, test)`` index arrays is used as given. A training fold
        that lacks a class fits each candidate on the classes it holds (the
        missing ones keep their raw probability).
    response : {"auto", "logits", "probabilities"}, default="auto"
        How to read the scores. "auto": probabilities when every value lies
        in [0, 1] and rows sum to 1 (1-D: values in [0, 1]); pass it
        explicitly for 1-D margins that happen to lie in [0, 1]. Logit
        calibrators given probabilities take their logarithm
        (``softmax(log p) = p``); probability calibrators given logits take
        their softmax.
    rule : {"one_se", "best"}, default="one_se"
        "one_se" as above; "best" takes the lowest mean log-loss with no
        protection of "passthrough" (for comparison).
    min_events_per_parameter : float, default=10
        Events needed per parameter per class; 0 turns the size rule (and
        the separation guard) off.
    prior : PriorCorrection or None, default=None
        A :class:`~sklcalib.calibration.PriorCorrection` applied in front of
        every candidate but "passthrough", which stays the uncorrected
        scores; the correction alone is the candidate ``"prior"``. A
        :class:`CalibrationWarning` says when the correction makes the
        scores worse (the rule of :func:`check_calibrator`).
    random_state : int, RandomState instance or None, default=0
        Shuffling of an integer ``cv``'s folds; the fixed default gives the
        same choice for the same scores.

    Attributes
    ----------
    best_estimator_ : calibrator or None
        The chosen candidate refitted on all the scores; None for
        "passthrough". With ``prior``, a private object holding the fitted
        correction (``.prior``) and calibrator (``.calibrator``).
    best_candidate_ : str
        Its name ("passthrough" for no calibration, "prior" for the
        correction alone, the class name for an instance candidate).
    best_index_ : int
        Its index in ``cv_results_``.
    cv_results_ : dict of list
        One entry per candidate (loadable with ``pandas.DataFrame``):
        ``candidate``, ``n_parameters`` (per class, as the size rule counts
        them), ``status`` ("chosen", "evaluated", "too few rows: ..." or
        "failed: ..."), ``mean_``/``std_`` of ``log_loss``, ``brier`` and
        ``ece`` over the folds (``std`` with ``ddof=0`` as in
        ``GridSearchCV``), ``delta_log_loss`` and ``delta_se`` (mean and
        standard error of the paired fold differences against
        "passthrough"), ``delta_log_loss_rows`` and ``delta_se_rows`` (the
        same for the per-row differences of the held-out log-losses, the
        do-no-harm step's numbers), ``within_one_se`` (of the best),
        ``rank_log_loss`` and ``split<i>_log_loss``. Candidates not
        evaluated hold NaN.
    reason_ : str
        Why ``best_candidate_`` was chosen, in one sentence.
    response_ : str
        "logits" or "probabilities": how the scores were read.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_splits_ : int
        Number of folds (0 when no candidate could be evaluated).

    See Also
    --------
    select_calibrator : This estimator fitted in one call.
    CalibratedClassifier : ``calibrator="auto"`` runs this selection on the
        estimator's held-out scores.
    check_calibrator : The harm check of one calibrator, on the same folds.

    Notes
    -----
    A candidate that raises during fitting is reported as "failed" and left
    out. Warnings of the candidates' fold fits are silenced; those of the
    final refit are not.

    Examples
    --------
    >>> from scipy.special import logit
    >>> from sklcalib.calibration import CalibratorSearchCV
    >>> from sklcalib.datasets import make_binary_scores
    >>> p, y = make_binary_scores(2000)  # calibrated
    >>> search = CalibratorSearchCV(response="logits").fit(3 * logit(p), y)
    >>> search.best_candidate_
    'temperature'
    >>> search.predict_proba(3 * logit(p[:2])).shape
    (2, 2)
    >>> search.fit(logit(p), y).best_candidate_  # refit on calibrated scores
    'passthrough'
    """

    def __init__(
        self,
        candidates=None,
        *,
        cv=5,
        response="auto",
        rule="one_se",
        min_events_per_parameter=10,
        prior=None,
        random_state=0,
    ):
        self.candidates = candidates
        self.cv = cv
        self.response = response
        self.rule = rule
        self.min_events_per_parameter = min_events_per_parameter
        self.prior = prior
        self.random_state = random_state

    def _check_params(self):
        check_option(self.response, "response", ("auto", LOGITS, PROBABILITIES))
        check_option(self.rule, "rule", ("one_se", "best"))
        check_scalar(self.min_events_per_parameter, "min_events_per_parameter", low=0)
        _check_cv_param(self.cv)
        if self.prior is not None and not isinstance(self.prior, PriorCorrection):
            raise ValueError(
                f"prior must be a PriorCorrection or None; got {self.prior!r}."
            )

    def _validate_scores(self, scores, *, reset):
        return validate_scores(self, scores, reset=reset, fitted="search")

    def fit(self, scores, y, sample_weight=None, **params):
        """Score every candidate by cross-validation; refit the chosen one.

        Parameters
        ----------
        scores : array-like of shape (n_samples, n_classes) or (n_samples,)
            Held-out scores of a classifier: logits (``decision_function``)
            or probabilities (``predict_proba``); 1-D for the positive class
            of a binary problem. Torch tensors (requiring grad or not) are
            accepted.
        y : array-like of shape (n_samples,)
            Targets; at least two classes, one score column per class.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows, passed to the candidates' ``fit`` and to
            the fold metrics.
        **params : dict
            ``groups``: group labels of the rows for a group splitter given
            as ``cv``.

        Returns
        -------
        self : object
            The fitted search.
        """
        self._check_params()
        unknown = sorted(set(params) - {"groups"})
        if unknown:
            raise ValueError(f"fit got unexpected parameter(s) {unknown}.")
        inputs, y, w = self._validate(scores, y, sample_weight)
        groups = params.get("groups")
        if groups is not None:
            groups = column_or_1d(as_numpy(groups))
            check_consistent_length(groups, y)
        return self._fit_inputs(inputs, y, w, groups=groups)

    def _validate(self, scores, y, sample_weight):
        """The checks of ``fit``, once: ``(inputs, y, weights)``; sets
        ``n_features_in_``, ``classes_`` and ``response_``."""
        scores, y, w = validate_fit_inputs(
            self, scores, y, sample_weight, fitted="search"
        )
        return _Inputs.from_scores(scores, self.response_), y, w

    # -- the search on prepared inputs (CalibratedClassifier calls it) -------

    def _fit_inputs(
        self, inputs, y, w, *, groups=None, metrics=("brier", "ece"), refit=True
    ):
        """The search on validated inputs; ``metrics`` beyond the log-loss
        that the table computes, and ``refit`` of the chosen candidate (the
        harm check needs neither)."""
        candidates, status, n_params, table, row_ll, row_w = self._fold_table(
            inputs, y, w, groups=groups, metrics=metrics
        )
        names = [_candidate_name(c) for c in candidates]
        n_cand, n_folds = table["log_loss"].shape
        evaluated = [
            i for i in range(n_cand) if status[i] == "evaluated" and n_folds >= 2
        ]
        chosen, within, reason = self._choose(
            candidates,
            evaluated,
            table["log_loss"],
            n_params,
            status,
            row_ll=row_ll,
            row_w=row_w,
        )
        status[chosen] = "chosen"
        self._record(names, n_params, status, table, within, candidates, row_ll, row_w)
        self.best_index_ = chosen
        self.best_candidate_ = names[chosen]
        self.n_splits_ = n_folds
        self.reason_ = reason
        self.best_estimator_ = None
        if refit:
            self.best_estimator_ = self._refit(candidates[chosen], inputs, y, w)
            if self.prior is not None and PASSTHROUGH in names:
                ll = table["log_loss"]
                _warn_harm(
                    "PriorCorrection",
                    ll[names.index(PRIOR)],
                    ll[names.index(PASSTHROUGH)],
                    _PRIOR_ADVICE,
                )
        return self

    def _fold_table(self, inputs, y, w, *, groups=None, metrics=()):
        """Every candidate's held-out scores on the folds: ``(candidates,
        status, parameters per class, fold table of the log-loss and
        ``metrics``, held-out rows' log-losses, their weights)``; sets
        ``classes_``. The harm check needs this table alone."""
        y = np.ravel(y)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        n_classes = len(self.classes_)
        candidates = _check_candidates(self.candidates, n_classes)
        if inputs.passthrough is None:  # no probabilities to pass through
            candidates = [c for c in candidates if not _is_passthrough(c)]
        if self.prior is not None:
            at = 1 if candidates and _is_passthrough(candidates[0]) else 0
            candidates.insert(at, PRIOR)
        n_cand = len(candidates)
        events = _events(inputs, y_idx, n_classes, w)
        n_params = [self._n_parameters(c, n_classes) for c in candidates]
        status = ["evaluated"] * n_cand
        for i, m in enumerate(n_params):
            needed = 0 if np.isnan(m) else math.ceil(self.min_events_per_parameter * m)
            if events < needed:
                status[i] = (
                    f"too few rows: {needed} events needed, {events:g} given (the "
                    "smallest class, or the rows the raw scores misclassify)"
                )
        to_fit = [i for i in range(n_cand) if status[i] == "evaluated"]
        splits = []
        if any(not _is_passthrough(candidates[i]) for i in to_fit):
            splits = _splits(self.cv, y_idx, self.random_state, groups)
        n_folds = len(splits)
        table = {m: np.full((n_cand, n_folds), np.nan) for m in ("log_loss", *metrics)}
        # every held-out row's log-loss, fold after fold: the do-no-harm step
        # compares a calibrator with the raw scores row by row
        held = [test for _, test in splits]
        row_w = np.ones(0) if not held else _held_weights(w, held)
        row_ll = np.full((n_cand, len(row_w)), np.nan)
        for i in to_fit:
            try:
                probas = self._fold_probas(candidates[i], inputs, y, y_idx, w, splits)
                at = 0
                for f, proba in enumerate(probas):
                    test = splits[f][1]
                    got, losses = _fold_and_row_scores(
                        y_idx[test], proba, _take(w, test), n_classes, metrics
                    )
                    for m, v in got.items():
                        table[m][i, f] = v
                    row_ll[i, at : at + len(test)] = losses
                    at += len(test)
            except Exception as exc:  # a candidate that cannot fit these scores
                status[i] = f"failed: {type(exc).__name__}: {exc}"[:200]
                for m in table:
                    table[m][i] = np.nan
                row_ll[i] = np.nan
        return candidates, status, n_params, table, row_ll, row_w

    def _n_parameters(self, candidate, n_classes):
        if _is_prior(candidate):
            # a fixed target prior has nothing to fit; "fit" and "em" estimate
            # one frequency per class
            fixed = not isinstance(self.prior.target_prior, str)
            return 0.0 if fixed else 1.0
        m = parameters_per_class(candidate, n_classes)
        return np.nan if m is None else float(m)

    def _fold_probas(self, candidate, inputs, y, y_idx, w, splits):
        """Held-out probabilities of a candidate on each split, one split at
        a time; isotonic regression by its kernel that sorts once for all
        splits (the same numbers, without a full fit per split)."""
        if self.prior is None and _is_plain_isotonic(candidate):
            probas = isotonic_fold_proba(
                inputs.probabilities, y_idx, len(self.classes_), w, splits
            )
            if probas is not None:
                return probas
        return (
            self._fold_proba(candidate, inputs, y, w, train, test)
            for train, test in splits
        )

    def _fold_proba(self, candidate, inputs, y, w, train, test):
        """Held-out probabilities of a candidate fitted on the training rows."""
        if _is_passthrough(candidate):
            return inputs.passthrough[test]
        calibrator = self._calibrator_for(candidate)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = fit_on_classes(
                calibrator,
                inputs.take(calibrator, train),
                y[train],
                self.classes_,
                _take(w, train),
            )
            proba = fitted.predict_proba(inputs.take(calibrator, test))
        proba = np.asarray(proba, dtype=np.float64)
        if not np.all(np.isfinite(proba)):
            raise ValueError("non-finite probabilities")
        return proba

    def _calibrator_for(self, candidate):
        """The unfitted object a candidate fits: the calibrator, behind the
        prior correction when there is one."""
        if _is_prior(candidate):
            return PriorThen(self.prior, None)
        calibrator = _make_candidate(candidate)
        return calibrator if self.prior is None else PriorThen(self.prior, calibrator)

    def _choose(
        self, candidates, evaluated, fold_ll, n_params, status, row_ll=None, row_w=None
    ):
        """(chosen index, within-one-SE flags, the reason in words).

        ``row_ll`` (candidates x held-out rows, with their weights ``row_w``):
        the held-out rows' log-losses, for the do-no-harm step against
        "passthrough"; None leaves that step out."""
        n_cand = len(candidates)
        within = np.zeros(n_cand, dtype=bool)
        fallback = next(
            (i for i in range(n_cand) if _is_passthrough(candidates[i])), None
        )
        if not evaluated:
            skipped = "; ".join(
                f"{_candidate_name(c)}: {s}"
                for c, s in zip(candidates, status, strict=True)
                if not _is_passthrough(c)
            )
            if fallback is None:  # no raw probabilities: the simplest candidate
                fallback = min(range(n_cand), key=lambda i: (n_params[i], i))
                return (
                    fallback,
                    within,
                    "no candidate could be evaluated and the scores have no "
                    f"probabilities to keep; the simplest one was taken ({skipped})",
                )
            return (
                fallback,
                within,
                "no calibrator could be evaluated, the raw scores are kept "
                f"({skipped})",
            )
        n_folds = fold_ll.shape[1]
        mean_ll = fold_ll.mean(axis=1)
        best = min(evaluated, key=lambda i: mean_ll[i])
        for i in evaluated:
            d = fold_ll[i] - fold_ll[best]
            within[i] = d.mean() <= d.std(ddof=1) / math.sqrt(n_folds)
        if self.rule == "best":
            return best, within, "the lowest mean fold log-loss (rule='best')"
        # the simplest within one standard error; unknown counts are last
        chosen = min(
            (i for i in evaluated if within[i]),
            key=lambda i: (np.inf if np.isnan(n_params[i]) else n_params[i], i),
        )
        if _is_passthrough(candidates[chosen]):
            reason = (
                "no calibrator is better than the raw scores by more than one "
                "standard error of the paired fold differences"
            )
            return chosen, within, reason
        reason = (
            "the simplest candidate within one standard error of the best "
            "mean fold log-loss"
        )
        if fallback is None or fallback not in evaluated or row_ll is None:
            return chosen, within, reason
        # do no harm: the chosen calibrator must also beat the raw scores by
        # more than one standard error of the per-row paired differences of
        # the held-out log-losses (n - 1 degrees of freedom, where the fold
        # differences have folds - 1): a gain that a few rows carry is noise.
        # On titanic's 262 validation rows quadratic scaling of a network
        # gained 1.5 fold standard errors but 0.76 row standard errors, and
        # lost 0.022 nats on the test split
        gain, se = _paired_gain(row_ll[fallback], row_ll[chosen], row_w)
        if gain > se:
            return chosen, within, reason
        name = _candidate_name(candidates[chosen])
        return (
            fallback,
            within,
            f"{name}, the simplest candidate within one standard error of the "
            f"best mean fold log-loss, beats the raw scores by {gain:.4f} "
            "nats a held-out row, not more than one standard error of the "
            f"per-row paired differences ({se:.4f}): the raw scores are kept",
        )

    def _record(
        self,
        names,
        n_params,
        status,
        table,
        within,
        candidates,
        row_ll=None,
        row_w=None,
    ):
        fold_ll = table["log_loss"]
        n_cand, n_folds = fold_ll.shape
        with warnings.catch_warnings():  # no fold at all: the mean of nothing
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = {m: v.mean(axis=1) for m, v in table.items()}
            std = {m: v.std(axis=1) for m, v in table.items()}
        ref = next((i for i in range(n_cand) if _is_passthrough(candidates[i])), None)
        delta = np.full(n_cand, np.nan)
        delta_se = np.full(n_cand, np.nan)
        if ref is not None and n_folds >= 2:
            for i in range(n_cand):
                d = fold_ll[i] - fold_ll[ref]
                if np.all(np.isfinite(d)):
                    delta[i] = d.mean()
                    delta_se[i] = d.std(ddof=1) / math.sqrt(n_folds)
        # the same difference row by row (the do-no-harm step's numbers)
        delta_rows = np.full(n_cand, np.nan)
        delta_rows_se = np.full(n_cand, np.nan)
        if ref is not None and row_ll is not None and n_folds >= 2:
            for i in range(n_cand):
                if np.all(np.isfinite(row_ll[i])) and np.all(np.isfinite(row_ll[ref])):
                    gain, se = _paired_gain(row_ll[ref], row_ll[i], row_w)
                    delta_rows[i], delta_rows_se[i] = -gain, se
        mean_ll = mean["log_loss"]
        order = np.argsort(np.where(np.isnan(mean_ll), np.inf, mean_ll), kind="stable")
        rank = np.empty(n_cand, dtype=int)
        rank[order] = np.arange(1, n_cand + 1)
        results = {
            "candidate": list(names),
            "n_parameters": list(n_params),
            "status": list(status),
        }
        for m in table:
            results[f"mean_{m}"] = mean[m].tolist()
            results[f"std_{m}"] = std[m].tolist()
        results.update(
            {
                "delta_log_loss": delta.tolist(),
                "delta_se": delta_se.tolist(),
                "delta_log_loss_rows": delta_rows.tolist(),
                "delta_se_rows": delta_rows_se.tolist(),
                "within_one_se": within.tolist(),
                "rank_log_loss": rank.tolist(),
            }
        )
        for f in range(n_folds):
            results[f"split{f}_log_loss"] = fold_ll[:, f].tolist()
        self.cv_results_ = results

    def _refit(self, candidate, inputs, y, w):
        if _is_passthrough(candidate):
            return None
        calibrator = self._calibrator_for(candidate)
        return fit_on_classes(calibrator, inputs.take(calibrator), y, self.classes_, w)

    @fill_doc
    def predict_proba(self, scores):
        """Calibrate new scores with the chosen candidate.

        Parameters
        ----------
        %(predict_scores)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Calibrated probabilities (the raw scores' for "passthrough"),
            floored at the machine epsilon: none is exactly 0 or 1.
        """
        check_is_fitted(self)
        scores = self._validate_scores(scores, reset=False)
        inputs = _Inputs.from_scores(scores, self.response_)
        if self.best_estimator_ is None:
            return floor_probabilities(inputs.passthrough)
        proba = self.best_estimator_.predict_proba(inputs.take(self.best_estimator_))
        return floor_probabilities(proba)

    @fill_doc
    def predict(self, scores):
        """Predict the class with the largest calibrated probability.

        %(predict_sections)s
        """
        return self.classes_[np.argmax(self.predict_proba(scores), axis=1)]

    def summary(self):
        """The candidates' table as text, best log-loss first.

        Returns
        -------
        text : str
            One line per candidate: mean ± std of the fold log-loss, its
            difference to "passthrough" ± standard error, Brier, ECE, status;
            then the reason of the choice.
        """
        check_is_fitted(self)
        r = self.cv_results_
        head = (
            f"{'candidate':<13} {'log-loss':>15} {'vs none':>17} "
            f"{'Brier':>15} {'ECE (%)':>13}  status"
        )
        lines = [head]
        order = sorted(
            range(len(r["candidate"])),
            key=lambda i: (math.isnan(r["mean_log_loss"][i]), r["mean_log_loss"][i]),
        )
        for i in order:
            name = r["candidate"][i][:13]
            status = r["status"][i].split(":")[0]  # the reason is in cv_results_
            if math.isnan(r["mean_log_loss"][i]):
                lines.append(f"{name:<13}{'':64}  {status}")  # status aligned
                continue
            delta = r["delta_log_loss"][i]
            delta_text = (
                "" if math.isnan(delta) else f"{delta:+.4f} ± {r['delta_se'][i]:.4f}"
            )
            lines.append(
                f"{name:<13} "
                f"{r['mean_log_loss'][i]:.4f} ± {r['std_log_loss'][i]:.4f} "
                f"{delta_text:>17} "
                f"{r['mean_brier'][i]:.4f} ± {r['std_brier'][i]:.4f} "
                f"{100 * r['mean_ece'][i]:5.2f} ± {100 * r['std_ece'][i]:5.2f}  "
                f"{status}"
            )
        return "\n".join(lines)

    # -- the attributes of the result this estimator replaces --------------

    def _deprecated(self, old, new):
        warnings.warn(
            f"the selection's {old!r} is deprecated and will be removed in a "
            f"future version; use {new!r}.",
            FutureWarning,
            stacklevel=3,
        )

    name = _deprecated_alias("name", "best_candidate_")
    calibrator = _deprecated_alias("calibrator", "best_estimator_")
    cv_results = _deprecated_alias("cv_results", "cv_results_")

    @property
    def n_classes(self):
        """Deprecated: use ``len(classes_)``."""
        self._deprecated("n_classes", "classes_")
        return len(self.classes_)


def _take(w, rows):
    return None if w is None else w[rows]


def _held_weights(w, held):
    """The weights of the held-out rows, fold after fold (ones unweighted)."""
    rows = np.concatenate(held)
    return np.ones(len(rows)) if w is None else np.asarray(w, dtype=np.float64)[rows]


def _paired_gain(ref_ll, cand_ll, w):
    """Mean and standard error of the per-row gain ``ref_ll - cand_ll``
    (weighted rows: the weighted mean and its sandwich standard error, which
    is ``sd / sqrt(n)`` for equal weights)."""
    d = np.asarray(ref_ll, dtype=np.float64) - np.asarray(cand_ll, dtype=np.float64)
    n = len(d)
    if n < 2 or w.sum() <= 0:
        return 0.0, math.inf
    mean = float(np.average(d, weights=w))
    var = n / (n - 1) * float(np.sum((w * (d - mean)) ** 2)) / float(w.sum()) ** 2
    return mean, math.sqrt(var)


def select_calibrator(
    scores,
    y,
    *,
    candidates=None,
    cv=5,
    random_state=0,
    response="auto",
    rule="one_se",
    min_events_per_parameter=10,
    sample_weight=None,
    prior=None,
    groups=None,
    segments=None,
):
    """Choose a post-hoc calibrator by cross-validated log-loss, "none" included.

    :class:`CalibratorSearchCV` fitted in one call: every candidate,
    ``"passthrough"`` (no calibration) among them, is fitted on the training
    folds of the calibration scores and scored on the held-out fold
    (log-loss, Brier score, 15-bin ECE); the simplest candidate within one
    standard error of the best is chosen, and it replaces the raw scores
    only when it beats them by more than the fold-to-fold noise and by more
    than one standard error of the per-row paired differences. Flexible
    candidates are not evaluated on few events (the smallest class, and the
    rows the raw scores misclassify); a set too small for every candidate
    keeps the raw scores and says why.

    Parameters
    ----------
    scores : array-like of shape (n_samples, n_classes) or (n_samples,)
        Held-out scores of a classifier: logits (``decision_function``) or
        probabilities (``predict_proba``); 1-D for the positive class of a
        binary problem.
    y : array-like of shape (n_samples,)
        Targets; at least two classes, one score column per class.
    candidates : list of str or calibrator, default=None
        Names of :data:`~sklcalib.calibration.CALIBRATORS` and
        "passthrough", or calibrator instances (cloned). None: "passthrough"
        and the registry's candidates that apply to the problem.
    cv : int, cross-validation generator or iterable, default=5
        Folds of the calibration scores (an integer is shuffled k-fold, not
        stratified; see :class:`CalibratorSearchCV`).
    random_state : int, RandomState instance or None, default=0
        Shuffling of an integer ``cv``'s folds.
    response : {"auto", "logits", "probabilities"}, default="auto"
        How to read ``scores``.
    rule : {"one_se", "best"}, default="one_se"
        The choice: the simplest within one standard error, or the best.
    min_events_per_parameter : float, default=10
        Events needed per parameter per class; 0 turns the size rule off.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows.
    prior : PriorCorrection or None, default=None
        A prior correction in front of every candidate but "passthrough".
    groups : array-like of shape (n_samples,), default=None
        Group labels for a group splitter given as ``cv``.
    segments : DataFrame or array-like of shape (n_samples, n_columns), default=None
        Segment columns of the rows (region, age band...). Given, the
        segment-aware maps of :class:`SegmentCalibrator` are candidates too:
        "passthrough", the global calibrator that this selection picks among
        ``candidates`` and the logistic and boosted segment maps are compared
        by the same rule, so a segment map is kept only when it beats them by
        more than one standard error; the result is then that fitted
        :class:`SegmentCalibrator` (``method_``, ``cv_results_``, ``reason_``;
        ``predict_proba(scores, segments=...)``). Not with ``prior`` or
        ``groups``.

    Returns
    -------
    selection : CalibratorSearchCV or SegmentCalibrator
        Fitted: ``best_candidate_``, ``best_estimator_`` (None for
        "passthrough"), ``cv_results_``, ``reason_``, ``predict_proba``
        and ``summary()``; with ``segments``, a fitted
        :class:`SegmentCalibrator`.

    See Also
    --------
    CalibratorSearchCV : The estimator, to clone or search.
    CalibratedClassifier : ``calibrator="auto"`` runs this selection on the
        estimator's held-out scores.

    Examples
    --------
    >>> from sklcalib.calibration import select_calibrator
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(2000)  # 3 classes, calibrated
    >>> select_calibrator(logits, y, response="logits").best_candidate_
    'passthrough'
    >>> select_calibrator(4 * logits, y, response="logits").best_candidate_
    'temperature'
    """
    if segments is not None:
        return _segment_selection(
            scores,
            y,
            segments,
            candidates,
            cv,
            random_state,
            response,
            rule,
            min_events_per_parameter,
            sample_weight,
            prior,
            groups,
        )
    search = CalibratorSearchCV(
        candidates,
        cv=cv,
        response=response,
        rule=rule,
        min_events_per_parameter=min_events_per_parameter,
        prior=prior,
        random_state=random_state,
    )
    params = {} if groups is None else {"groups": groups}
    return search.fit(scores, y, sample_weight=sample_weight, **params)


def check_calibrator(
    calibrator,
    scores,
    y,
    *,
    cv=5,
    response="auto",
    sample_weight=None,
    min_events_per_parameter=10,
    random_state=0,
):
    """Warn when a calibrator is likely to make these scores worse.

    Two checks, each issuing a :class:`CalibrationWarning`: the calibration
    set is small for the calibrator's flexibility (fewer rows in the smallest
    class than ``min_events_per_parameter`` per parameter per class), and the
    calibrator's ``cv``-fold cross-validated log-loss on these scores is worse
    than the raw scores' by more than the two-sided 95 % Student quantile
    (folds - 1 degrees of freedom) times the standard error of the paired fold
    differences, and by more than 1 % of the raw log-loss. The folds are
    those of :class:`CalibratorSearchCV` (this is its table for
    ``["passthrough", calibrator]`` with a stricter rule).

    Parameters
    ----------
    calibrator : calibrator instance
        Unfitted (cloned for each fold, never modified).
    scores : array-like of shape (n_samples, n_classes) or (n_samples,)
        The calibration scores, read as in :func:`select_calibrator`.
    y : array-like of shape (n_samples,)
        Targets.
    cv : int or cross-validation generator, default=5
        Folds (see :class:`CalibratorSearchCV`).
    response : {"auto", "logits", "probabilities"}, default="auto"
        How to read ``scores`` (see :func:`select_calibrator`).
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights.
    min_events_per_parameter : float, default=10
        The size rule's rows per parameter.
    random_state : int, RandomState instance or None, default=0
        Shuffling of an integer ``cv``'s folds.

    Returns
    -------
    messages : list of str
        The warnings issued (empty when none).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklcalib.calibration import IsotonicCalibrator, check_calibrator
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=100)
    >>> y = (rng.uniform(size=100) < p).astype(int)
    >>> with warnings.catch_warnings(record=True):
    ...     messages = check_calibrator(IsotonicCalibrator(), p, y)
    >>> "parameter" in messages[0]
    True
    """
    search = CalibratorSearchCV(
        [PASSTHROUGH, calibrator],
        cv=cv,
        response=response,
        min_events_per_parameter=0,
        random_state=random_state,
    )
    # the search's own validation, then its folds without a refit
    check_scalar(min_events_per_parameter, "min_events_per_parameter", low=0)
    search._check_params()
    inputs, y, w = search._validate(scores, y, sample_weight)
    messages = [
        calibration_size_warning(
            calibrator,
            y,
            min_events_per_parameter=min_events_per_parameter,
            sample_weight=w,
        ),
        harm_check(calibrator, inputs, y, w, cv=cv, random_state=random_state),
    ]
    return [m for m in messages if m is not None]


def harm_check(calibrator, inputs, y, w, *, cv=5, prior=None, random_state=0):
    """Warn (CalibrationWarning) when ``calibrator`` (None: the ``prior``
    correction alone; else also the correction in front of it) makes the raw
    scores worse on the selection's
    folds of these inputs; return the message about the calibrator, or None.
    A check that cannot run (too few rows, a calibrator that fails on a fold)
    says nothing: it never breaks a fit that succeeds."""
    if inputs.passthrough is None:
        return None
    search = CalibratorSearchCV(
        [PASSTHROUGH] if calibrator is None else [PASSTHROUGH, calibrator],
        cv=cv,
        min_events_per_parameter=0,
        prior=prior,
        random_state=random_state,
    )
    try:
        candidates, _, _, table, _, _ = search._fold_table(inputs, y, w)
    except Exception:
        return None
    losses = dict(zip(map(_candidate_name, candidates), table["log_loss"], strict=True))
    raw = losses[PASSTHROUGH]
    if prior is not None:
        _warn_harm("PriorCorrection", losses[PRIOR], raw, _PRIOR_ADVICE)
    if calibrator is None:
        return None
    return _warn_harm(
        type(calibrator).__name__,
        losses[_candidate_name(calibrator)],
        raw,
        _CALIBRATOR_ADVICE,
    )
