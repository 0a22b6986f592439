"""Prior-shift correction of probabilities (Saerens, Latinne & Decaestecker, 2002)."""

import warnings
from numbers import Integral
from typing import ClassVar

import numpy as np
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted, validate_data

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._param_validation import Interval, StrOptions
from sklcalib._utils._scores import as_2d as _as_2d
from sklcalib._utils._validation import (
    _outside_stacklevel,
    check_prob_values,
    check_sample_weight,
    check_scalar,
)

from ._base import (
    POSITIVE,
    PROBABILITIES,
    BaseCalibrator,
    warn_if_weights_shrink_rows,
)

_PRIOR_OPTIONS = ("fit", "em")


def _normalised_prior(prior, classes, name):
    """A prior given as an array (in the order of ``classes``) or a dict keyed
    by class label, as a probability vector; counts and weights are
    normalised."""
    if isinstance(prior, dict):
        missing = [c for c in classes.tolist() if c not in prior]
        if missing:
            raise ValueError(f"{name}: no value for class(es) {missing}.")
        values = np.array([prior[c] for c in classes.tolist()], dtype=np.float64)
    else:
        values = np.asarray(prior, dtype=np.float64)
        if values.ndim != 1 or values.shape[0] != len(classes):
            raise ValueError(
                f"{name} must have one value per class ({len(classes)}); got "
                f"shape {values.shape}."
            )
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"{name} must be finite and positive; got {values.tolist()}.")
    return values / values.sum()


def _em_prior(proba, train_prior, sample_weight, max_iter, tol):
    """Saerens et al.'s EM for the class prior of unlabelled data, with one
    pseudo-row per class.

    E-step: the posteriors re-weighted by ``prior / train_prior`` and
    renormalised; M-step: the new prior is ``(sum_i w_i q_ik + 1) / (sum(w) +
    K)``. Starts at the training prior; each step increases the likelihood
    ``sum_i w_i log sum_k p_ik prior_k / train_prior_k`` plus ``sum_k log
    prior_k``, and the fixed point is its maximum: the posterior mode under a
    uniform Dirichlet(2) prior on the class prior (Laplace smoothing). The
    pseudo-rows keep every entry above ``1 / (sum(w) + K)``: the plain
    maximum likelihood sends the prior of a class the data barely shows to 0
    (10^-262 after a thousand steps), and the correction to log-odds of
    -600. Returns the prior, the iterations and each class's expected count
    ``sum_i w_i q_ik`` (its evidence, in rows).
    """
    n_classes = proba.shape[1]
    total = proba.shape[0] if sample_weight is None else float(sample_weight.sum())
    prior = train_prior.copy()
    it = max_iter
    for it in range(1, max_iter + 1):  # noqa: B007 (it is returned)
        q = proba * (prior / train_prior)
        q /= q.sum(axis=1, keepdims=True)
        counts = q.sum(axis=0) if sample_weight is None else sample_weight @ q
        new = (counts + 1.0) / (total + n_classes)
        done = np.max(np.abs(new - prior)) < tol
        prior = new
        if done:
            break
    return prior, it, counts


def _warn_no_evidence(classes, counts):
    """Warn that EM found (almost) no row of some classes."""
    absent = [c for c, n in zip(classes.tolist(), counts, strict=True) if n < 1]
    if absent:
        warnings.warn(
            "PriorCorrection(target_prior='em'): the unlabelled probabilities hold "
            f"less than one row's worth of evidence for class(es) {absent}; EM's "
            "pseudo-row per class keeps their prior at about 1 / (n + n_classes) "
            "instead of letting it fall to 0. Check that these classes occur "
            "in the deployment data, or give target_prior explicitly.",
            UserWarning,
            stacklevel=_outside_stacklevel(),
        )


@fill_doc
class PriorCorrection(BaseCalibrator):
    """Undo a shift of the class prior: ``p_k * target_k / train_k``, renormalised.

    A classifier trained under class prior ``train`` (its training frequencies,
    re-weighted by ``class_weight``, ``scale_pos_weight`` or subsampling)
    predicts posteriors for that prior. Under the prior ``target`` the
    posteriors are ``p_k * (target_k / train_k)`` renormalised (Bayes' rule
    with the class-conditional densities unchanged; Saerens, Latinne &
    Decaestecker, 2002; Elkan, 2001). This calibrator applies that map; with
    ``target_prior="em"`` it estimates an unknown target prior from unlabelled
    probabilities by Saerens et al.'s EM algorithm.

    Parameters
    ----------
    train_prior : array-like of shape (n_classes,), dict or "uniform", \
            default="uniform"
        The prior the classifier was trained under, in the order of
        ``classes_`` or as ``{label: value}``; counts or weights are
        normalised. "uniform": equal priors, the effective prior of training
        with ``class_weight="balanced"``.
    target_prior : array-like of shape (n_classes,), dict, "fit" or "em", \
            default="fit"
        The prior to correct to. "fit": the (weighted) class frequencies of
        ``y`` given to ``fit``; "em": estimated by EM from the probabilities
        given to ``fit`` (``y`` not needed, e.g. the unlabelled scores of the
        deployment data), with one pseudo-row per class (see Notes).
    max_iter : int, default=1000
        Most EM iterations.
    tol : float, default=1e-10
        EM stops when no prior entry moves by more than ``tol``.

    Attributes
    ----------
    train_prior_ : ndarray of shape (n_classes,)
        The training prior, normalised.
    target_prior_ : ndarray of shape (n_classes,)
        The target prior (the EM estimate with ``target_prior="em"``).
    ratio_ : ndarray of shape (n_classes,)
        ``target_prior_ / train_prior_``.
    n_iter_ : int
        EM iterations run (0 without EM).
    classes_ : ndarray of shape (n_classes,)
        Class labels (``0 .. K-1`` when fitted without ``y``).
    n_features_in_ : int
        Number of probability columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names, when ``fit`` got a DataFrame with string column names.

    See Also
    --------
    CalibratedClassifier : Its ``prior`` option applies a correction before
        the calibrator.

    Notes
    -----
    The correction is exact when the classifier's posteriors are calibrated
    for the training prior: it is Bayes' rule. For logits it is the shift
    ``z_k + log(target_k / train_k)``; :class:`CalibratedClassifier` applies
    it that way in front of a logit calibrator. The class-weighted training
    prior is ``train_k ∝ w_k n_k`` for class weights ``w`` and training class
    counts ``n``; :meth:`from_class_weight` and :meth:`from_scale_pos_weight`
    build it.

    The EM estimate counts one pseudo-row per class (Laplace smoothing: the
    posterior mode under a uniform Dirichlet(2) prior), so no class's prior
    falls below ``1 / (n + K)`` for n rows (``sum(sample_weight)``, weights
    counting as repeated rows): the plain maximum likelihood drives the
    prior of a class the data barely shows to 0, and with it every corrected
    probability of that class. A warning names the classes with less than
    one row's worth of evidence. As a pipeline step, ``transform`` returns the corrected
    probabilities, so ``make_pipeline(PriorCorrection(...), IsotonicCalibrator())``
    calibrates after the correction.

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import PriorCorrection
    >>> p = np.array([[0.5, 0.5], [0.8, 0.2]])  # trained on balanced classes
    >>> corr = PriorCorrection(train_prior=[0.5, 0.5], target_prior=[0.9, 0.1])
    >>> corr.fit(p, [0, 1]).predict_proba(p).round(3)
    array([[0.9  , 0.1  ],
           [0.973, 0.027]])
    """

    _input = PROBABILITIES

    def __init__(
        self, train_prior="uniform", target_prior="fit", max_iter=1000, tol=1e-10
    ):
        self.train_prior = train_prior
        self.target_prior = target_prior
        self.max_iter = max_iter
        self.tol = tol

    @classmethod
    @fill_doc
    def from_class_weight(cls, class_weight, y, *, target_prior=None, **kwargs):
        """The correction of a classifier trained with ``class_weight``.

        Parameters
        ----------
        class_weight : dict or "balanced"
            As given to the classifier (``{label: weight}``; "balanced" means
            ``n / (K n_k)``, an effective uniform prior).
        y : array-like of shape (n_samples,)
            The training labels.
        target_prior : array-like, dict, "fit", "em" or None, default=None
            None: the training class frequencies (the unweighted population).
        %(prior_constructor_tail)s

        Examples
        --------
        >>> from sklcalib.calibration import PriorCorrection
        >>> y = [0] * 90 + [1] * 10
        >>> corr = PriorCorrection.from_class_weight("balanced", y)
        >>> corr.train_prior, corr.target_prior
        ([0.5, 0.5], [0.9, 0.1])
        """
        y = np.asarray(y)
        classes, counts = np.unique(y, return_counts=True)
        balanced = isinstance(class_weight, str) and class_weight == "balanced"
        if not (balanced or isinstance(class_weight, dict)):
            raise ValueError(
                f'class_weight must be a dict or "balanced"; got {class_weight!r}.'
            )
        # scikit-learn's own reading of the dict (a class it lacks weighs 1;
        # keys that are not classes are refused unless every class has one),
        # so the correction uses the weights the classifier was trained with
        weights = compute_class_weight(class_weight, classes=classes, y=y)
        train = weights * counts
        target = counts / counts.sum() if target_prior is None else target_prior
        return cls(
            train_prior=(train / train.sum()).tolist(),
            target_prior=target.tolist() if isinstance(target, np.ndarray) else target,
            **kwargs,
        )

    @classmethod
    @fill_doc
    def from_scale_pos_weight(cls, scale_pos_weight, y, *, target_prior=None, **kwargs):
        """The correction of a binary booster trained with ``scale_pos_weight``.

        Parameters
        ----------
        scale_pos_weight : float
            The weight of the positive class (``classes_[1]``), as given to
            LightGBM or XGBoost.
        y : array-like of shape (n_samples,)
            The (binary) training labels.
        target_prior : array-like, dict, "fit", "em" or None, default=None
            None: the training class frequencies.
        %(prior_constructor_tail)s

        Examples
        --------
        >>> from sklcalib.calibration import PriorCorrection
        >>> corr = PriorCorrection.from_scale_pos_weight(9.0, [0] * 90 + [1] * 10)
        >>> corr.train_prior
        [0.5, 0.5]
        """
        check_scalar(scale_pos_weight, "scale_pos_weight", low=0, low_open=True)
        classes = np.unique(np.asarray(y))
        if len(classes) != 2:
            raise ValueError(
                "scale_pos_weight is for binary problems; y has "
                f"{len(classes)} classes."
            )
        weights = {classes[0]: 1.0, classes[1]: float(scale_pos_weight)}
        return cls.from_class_weight(weights, y, target_prior=target_prior, **kwargs)

    _parameter_constraints: ClassVar[dict] = {
        "train_prior": ["array-like", dict, StrOptions({"uniform"})],
        "target_prior": ["array-like", dict, StrOptions(set(_PRIOR_OPTIONS))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [POSITIVE],
    }

    def _sample_size_term(self):
        if isinstance(self.target_prior, str) and self.target_prior == "em":
            return "EM's pseudo-row per class"
        return None

    def fit(self, X, y=None, sample_weight=None):
        """Set the priors; with ``target_prior="em"``, estimate the target.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Probabilities of the classifier (1-D: the positive class of a
            binary problem).
        y : array-like of shape (n_samples,), default=None
            Labels; needed for ``target_prior="fit"``. Without them the
            classes are ``0 .. K-1``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in the class frequencies and the EM means.

        Returns
        -------
        self : object
            The fitted correction.
        """
        if y is not None:
            return super().fit(X, y, sample_weight)
        self._check_params()
        if isinstance(self.target_prior, str) and self.target_prior == "fit":
            raise ValueError(
                'target_prior="fit" needs y: the class frequencies of y are the '
                'target prior. Pass y, a target prior, or target_prior="em".'
            )
        X = validate_data(self, _as_2d(X), reset=True, dtype=np.float64)
        X = check_prob_values(X, "X")
        n_columns = X.shape[1]
        self.classes_ = np.arange(2 if n_columns == 1 else n_columns)
        w = check_sample_weight(sample_weight, X.shape[0])
        warn_if_weights_shrink_rows(self, w, self._sample_size_term())
        self._fit(X, None, w)
        return self

    def _fit(self, X, y_idx, sample_weight=None):
        n_classes = len(self.classes_)
        if isinstance(self.train_prior, str):  # "uniform"
            self.train_prior_ = np.full(n_classes, 1.0 / n_classes)
        else:
            self.train_prior_ = _normalised_prior(
                self.train_prior, self.classes_, "train_prior"
            )
        self.n_iter_ = 0
        if isinstance(self.target_prior, str) and self.target_prior == "fit":
            freq = np.bincount(y_idx, weights=sample_weight, minlength=n_classes)
            self.target_prior_ = freq / freq.sum()
        elif isinstance(self.target_prior, str):  # "em"
            proba = self._columns(X)
            self.target_prior_, self.n_iter_, counts = _em_prior(
                proba, self.train_prior_, sample_weight, self.max_iter, self.tol
            )
            _warn_no_evidence(self.classes_, counts)
        else:
            self.target_prior_ = _normalised_prior(
                self.target_prior, self.classes_, "target_prior"
            )
        self.ratio_ = self.target_prior_ / self.train_prior_

    @staticmethod
    def _columns(X):
        return np.column_stack([1.0 - X[:, 0], X[:, 0]]) if X.shape[1] == 1 else X

    def _predict_proba(self, X):
        q = self._columns(X) * self.ratio_
        return q / q.sum(axis=1, keepdims=True)

    def shift_logits(self, logits):
        """The correction applied to logits: ``z_k + log(target_k / train_k)``.

        Parameters
        ----------
        logits : array-like of shape (n_samples, n_classes) or (n_samples,)
            Logits; 1-D binary margins ``z_1 - z_0`` get
            ``log(ratio_1 / ratio_0)`` added.

        Returns
        -------
        shifted : ndarray of the same shape
            The shifted logits.
        """
        check_is_fitted(self)
        z = np.asarray(logits, dtype=np.float64)
        log_ratio = np.log(self.ratio_)
        if z.ndim == 1 or z.shape[1] == 1:
            return z + (log_ratio[1] - log_ratio[0])
        return z + log_ratio

    def transform(self, X):
        """The corrected probabilities (``predict_proba``), for pipelines.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Probabilities.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            The corrected probabilities.
        """
        return self.predict_proba(X)

    def fit_transform(self, X, y=None, sample_weight=None):
        """``fit`` then ``transform``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Probabilities.
        y : array-like of shape (n_samples,), default=None
            Labels (see ``fit``).
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            The corrected probabilities.
        """
        return self.fit(X, y, sample_weight).transform(X)
