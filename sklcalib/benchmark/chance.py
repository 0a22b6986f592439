"""Which benchmark runs learnt nothing: test error at or near chance, and a
temperature-scaled log-loss no better than the class frequencies'.

A net that collapsed (predicting one class, or noise) can have a tiny ECE: its
confidence matches its poor accuracy. Such a run must not be printed as the best
calibrated. The references are the *majority-class error* ``e0 = 1 - max_k n_k /
n`` of the test split, the error of always predicting its most frequent class
(``1 - 1/K`` when the K classes are balanced), and the *prior's log-loss*, that
of predicting the training split's class frequencies for every test row.

**Rule.** A run is *at or near chance* when its test error is at least

    ``e0 - max(2 * sqrt(e0 * (1 - e0) / n), e0 / 4)``

that is, when it removes less than a quarter of the majority-class error, or
when its error is within two binomial standard errors of ``e0`` (on small test
splits the second term is the larger one: there a lower error may be luck),
*and* its test log-loss after temperature scaling is not below the prior's: the
95 % interval of the mean per-row difference to it does not lie below 0. The
second leg keeps the rule meaningful for rare classes: there even a model with
real signal predicts the majority class almost everywhere (credit default,
3.4 % positives: logistic regression errs on 2.6 % of the test rows, a quarter
of e0 is not removed, while its log-loss is half the prior's), and the error
alone would flag every model of the set. The log-loss is taken after
temperature scaling, which keeps every prediction's rank: a criterion that
leaves its net under-confident by design (focal loss on 5 % positives: raw
log-loss 0.38 against the prior's 0.21, 0.18 at T = 0.3) has learnt what a
temperature reveals. Rows without the log-loss columns (a csv of an earlier
version) are judged by the error.
"""

import math

import numpy as np

__all__ = [
    "CHANCE_FRACTION",
    "CHANCE_RULE",
    "CHANCE_Z",
    "PRIOR_Z",
    "chance_threshold",
    "is_at_chance",
    "majority_class_error",
    "runs_at_chance",
]

#: a run must remove more than this fraction's complement of the majority-class
#: error: error >= CHANCE_FRACTION * e0 is flagged whatever the test size
CHANCE_FRACTION = 0.75
#: binomial standard errors below e0 that an error must reach to count as learnt
CHANCE_Z = 2.0
#: the normal quantile of the 95 % interval of the log-loss difference to the
#: prior (as the boosting tables' flag)
PRIOR_Z = 1.959963984540054

#: the rule in words, for the reports
CHANCE_RULE = (
    "at or near chance: test error >= e0 - max(2·sqrt(e0(1 - e0)/n), e0/4), where "
    "e0 is the error of always predicting the most frequent test class and n the "
    "number of test samples (the run removes less than a quarter of e0, or is "
    "within two binomial standard errors of it), and a test log-loss after "
    "temperature scaling not below that of the training split's class "
    "frequencies (the 95 % interval of the mean per-row difference does not lie "
    "below 0)"
)


def majority_class_error(y_true):
    """Test error of always predicting the most frequent class of ``y_true``.

    Examples
    --------
    >>> from sklcalib.benchmark.chance import majority_class_error
    >>> majority_class_error([0, 0, 0, 1])
    0.25
    """
    _, counts = np.unique(np.asarray(y_true), return_counts=True)
    return float(1.0 - counts.max() / counts.sum())


def chance_threshold(chance_error, n_test):
    """The test error from which a run counts as at or near chance.

    Parameters
    ----------
    chance_error : float
        Majority-class error ``e0`` of the test split.
    n_test : int
        Number of test samples.

    Returns
    -------
    threshold : float

    Examples
    --------
    Balanced binary test split of 400 samples: an error of 0.375 or more is
    flagged (a quarter of 0.5 is larger than two standard errors, 0.05):

    >>> from sklcalib.benchmark.chance import chance_threshold
    >>> chance_threshold(0.5, 400)
    0.375
    """
    e0 = float(chance_error)
    binomial = CHANCE_Z * math.sqrt(e0 * (1.0 - e0) / int(n_test))
    return e0 - max(binomial, (1.0 - CHANCE_FRACTION) * e0)


def is_at_chance(error, chance_error, n_test, nll_vs_prior=None, nll_vs_prior_se=None):
    """Whether a run is at or near chance (see the module's rule).

    Parameters
    ----------
    error : float
        Test error.
    chance_error : float
        Majority-class error ``e0`` of the test split.
    n_test : int
        Number of test samples.
    nll_vs_prior, nll_vs_prior_se : float, optional
        Mean per-row difference of the temperature-scaled test log-loss to the
        prior's (negative is better) and its standard error; without them the
        error alone decides.

    Returns
    -------
    flagged : bool
        Rows without the error's reference (NaN, e.g. a csv of an older
        version) are never flagged.

    Examples
    --------
    >>> from sklcalib.benchmark.chance import is_at_chance
    >>> is_at_chance(0.48, 0.5, 400), is_at_chance(0.08, 0.5, 400)
    (True, False)
    >>> # 2.6 % errors against 3.4 % of majority-class errors, but a log-loss
    >>> # 0.07 below the prior's (standard error 0.005): not at chance
    >>> is_at_chance(0.026, 0.034, 2000, -0.07, 0.005)
    False
    """
    values = (error, chance_error, n_test)
    if any(v is None or not math.isfinite(float(v)) for v in values):
        return False
    if float(error) < chance_threshold(chance_error, n_test):
        return False
    gain = (nll_vs_prior, nll_vs_prior_se)
    if any(v is None or not math.isfinite(float(v)) for v in gain):
        return True
    # flagged unless the interval of the difference to the prior is below 0
    return float(nll_vs_prior) + PRIOR_Z * float(nll_vs_prior_se) >= 0.0


def runs_at_chance(rows):
    """The rows of runs at or near chance (the module's rule).

    Temperature scaling never changes the predicted class, so the error before
    scaling is the run's error; the log-loss is the one after scaling.
    """
    return [
        row
        for row in rows
        if is_at_chance(
            row.get("error_pre"),
            row.get("chance_error"),
            row.get("n_test"),
            row.get("nll_post_vs_prior"),
            row.get("nll_post_vs_prior_se"),
        )
    ]
