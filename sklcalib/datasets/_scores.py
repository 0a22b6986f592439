"""Scores with a known calibration: the data of the examples and quick checks.

A calibrator or a metric is best shown on scores whose truth is known: labels
drawn from a stated probability, so that a calibrated input, an over-confident
one and the correction are all known in advance. These two generators draw
them in a few lines of numpy, with ``numpy.random.default_rng``.
"""

import numpy as np

from sklcalib._utils._validation import check_scalar


def _rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(
        check_scalar(random_state, "random_state", integer=True, low=0)
    )


def make_binary_scores(n_samples=200, *, low=0.0, high=1.0, truth=None, random_state=0):
    """Draw positive-class probabilities and their labels from a known truth.

    The scores ``p`` are drawn uniformly on ``[low, high)``; the label of a
    score is 1 with probability ``truth(p)``, 0 otherwise. The default truth is
    ``p`` itself: the scores are calibrated. A truth ``lambda p: p**2`` makes
    them over-confident (a score of 0.5 is right a quarter of the time).

    Parameters
    ----------
    n_samples : int, default=200
        Number of scores.
    low, high : float, default=0.0, 1.0
        Range of the scores, ``0 <= low < high <= 1``.
    truth : callable, default=None
        Maps the array of scores to the probability that each label is 1
        (values in ``[0, 1]``); None: the identity.
    random_state : int or numpy.random.Generator, default=0
        Seed of ``numpy.random.default_rng`` (or the generator itself). The
        scores are drawn first, then one uniform number per label.

    Returns
    -------
    p : ndarray of shape (n_samples,)
        The scores, float64.
    y : ndarray of shape (n_samples,)
        The labels, int64 in ``{0, 1}``.

    See Also
    --------
    make_logits : Multiclass logits with a known temperature.

    Examples
    --------
    >>> from sklcalib.datasets import make_binary_scores
    >>> p, y = make_binary_scores(1000, truth=lambda p: p**2)
    >>> bool(y.mean() < p.mean())  # over-confident: fewer positives than said
    True
    """
    n_samples = check_scalar(n_samples, "n_samples", integer=True, low=1)
    low = check_scalar(low, "low", low=0, high=1)
    high = check_scalar(high, "high", low=low, low_open=True, high=1)
    if truth is not None and not callable(truth):
        raise ValueError(f"truth must be a callable or None, got {truth!r}.")
    rng = _rng(random_state)
    p = rng.uniform(low, high, size=n_samples)
    q = p if truth is None else np.asarray(truth(p), dtype=np.float64)
    if q.shape != p.shape or not np.all((q >= 0) & (q <= 1)):
        raise ValueError(
            "truth must map the scores to probabilities in [0, 1] of the same "
            f"shape {p.shape}."
        )
    return p, (rng.uniform(size=n_samples) < q).astype(np.int64)


def make_logits(n_samples=300, n_classes=3, *, temperature=1.0, random_state=0):
    """Draw the logits of a model over-confident by ``temperature``, and labels.

    The logits are ``temperature * z`` with ``z`` standard normal, one value
    per sample and class; the label of a sample is drawn from ``softmax(z)``
    (the Gumbel-max trick: the argmax of ``logits / temperature`` plus
    Gumbel noise). Dividing the logits by ``temperature`` calibrates them:
    ``temperature=1`` gives calibrated logits, a larger one over-confident
    ones (what temperature scaling corrects).

    Parameters
    ----------
    n_samples : int, default=300
        Number of samples.
    n_classes : int, default=3
        Number of classes (columns), at least 2.
    temperature : float, default=1.0
        The temperature that calibrates the logits, ``> 0``.
    random_state : int or numpy.random.Generator, default=0
        Seed of ``numpy.random.default_rng`` (or the generator itself). The
        normal draws come first, then the Gumbel noise.

    Returns
    -------
    logits : ndarray of shape (n_samples, n_classes)
        The logits, float64.
    y : ndarray of shape (n_samples,)
        The labels, int64 in ``0..n_classes-1``.

    See Also
    --------
    make_binary_scores : Binary probabilities with a known truth.
    sklcalib.calibration.TemperatureScaler : What undoes the temperature.

    Examples
    --------
    >>> from sklcalib.calibration import TemperatureScaler
    >>> from sklcalib.datasets import make_logits
    >>> logits, y = make_logits(2000, 4, temperature=3)
    >>> logits.shape
    (2000, 4)
    >>> round(float(TemperatureScaler().fit(logits, y).temperature_), 1)  # found
    2.9
    """
    n_samples = check_scalar(n_samples, "n_samples", integer=True, low=1)
    n_classes = check_scalar(n_classes, "n_classes", integer=True, low=2)
    temperature = check_scalar(temperature, "temperature", low=0, low_open=True)
    rng = _rng(random_state)
    logits = temperature * rng.normal(size=(n_samples, n_classes))
    noisy = logits / temperature + rng.gumbel(size=(n_samples, n_classes))
    return logits, np.argmax(noisy, axis=1).astype(np.int64)
