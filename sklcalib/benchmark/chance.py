"""Which benchmark runs learnt nothing: test error at or near chance.

A net that collapsed (predicting one class, or noise) can have a tiny ECE: its
confidence matches its poor accuracy. Such a run must not be printed as the best
calibrated. The reference is the *majority-class error* ``e0 = 1 - max_k n_k / n``
of the test split: the error of always predicting its most frequent class
(``1 - 1/K`` when the K classes are balanced).

**Rule.** A run is *at or near chance* when its test error is at least

    ``e0 - max(2 * sqrt(e0 * (1 - e0) / n), e0 / 4)``

that is, when it removes less than a quarter of the majority-class error, or
when its error is within two binomial standard errors of ``e0`` (on small test
splits the second term is the larger one: there a lower error may be luck).
"""

import math

import numpy as np

__all__ = [
    "CHANCE_FRACTION",
    "CHANCE_RULE",
    "CHANCE_Z",
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

#: the rule in words, for the reports
CHANCE_RULE = (
    "at or near chance: test error >= e0 - max(2·sqrt(e0(1 - e0)/n), e0/4), where "
    "e0 is the error of always predicting the most frequent test class and n the "
    "number of test samples (the run removes less than a quarter of e0, or is "
    "within two binomial standard errors of it)"
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


def is_at_chance(error, chance_error, n_test):
    """Whether a test error is at or near chance (see the module's rule).

    Rows without the reference (NaN, e.g. a csv of an older version) are never
    flagged.

    Examples
    --------
    >>> from sklcalib.benchmark.chance import is_at_chance
    >>> is_at_chance(0.48, 0.5, 400), is_at_chance(0.08, 0.5, 400)
    (True, False)
    """
    values = (error, chance_error, n_test)
    if any(v is None or not math.isfinite(float(v)) for v in values):
        return False
    return float(error) >= chance_threshold(chance_error, n_test)


def runs_at_chance(rows):
    """The rows of runs whose test error (before scaling) is at or near chance.

    Temperature scaling never changes the predicted class, so the error before
    scaling is the run's error.
    """
    return [
        row
        for row in rows
        if is_at_chance(
            row.get("error_pre"), row.get("chance_error"), row.get("n_test")
        )
    ]
