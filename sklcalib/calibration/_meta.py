"""CalibratedClassifier: scikit-learn's CalibratedClassifierCV for any calibrator."""

import warnings

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import check_cv
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    process_routing,
)
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, has_fit_parameter, indexable

from sklcalib._utils._scores import binary_logits, log_floored
from sklcalib._utils._validation import check_sample_weight

from ._base import LOGITS, PROBABILITIES, softmax_rows
from ._prior import PriorCorrection
from ._registry import AUTO, CALIBRATORS, PASSTHROUGH, canonical_name
from ._select import (
    _Inputs,
    _select,
    calibration_harm_warning,
    calibration_size_warning,
)
from ._temperature import TemperatureScaler


def _needs_logits(calibrator):
    return getattr(calibrator, "_input", LOGITS) == LOGITS


def _logit_method(estimator):
    if hasattr(estimator, "predict_logits"):
        # all K logit columns (NetClassifier): a binary decision_function
        # is one margin column, too little for vector or matrix scaling
        return "predict_logits"
    if hasattr(estimator, "decision_function"):
        return "decision_function"
    return "predict_proba"


def _response_method(estimator, calibrator):
    """Name of the estimator method whose output the calibrator takes."""
    has_decision = hasattr(estimator, "decision_function")
    has_proba = hasattr(estimator, "predict_proba")
    if not (has_decision or has_proba):
        raise ValueError(
            "estimator must have a decision_function or a predict_proba method; "
            f"{type(estimator).__name__} has neither."
        )
    if isinstance(calibrator, str) and calibrator == PASSTHROUGH:
        if not has_proba:
            raise ValueError(
                'calibrator="passthrough" returns the estimator\'s own '
                f"probabilities, but {type(estimator).__name__} has no "
                "predict_proba method."
            )
        return "predict_proba"
    if _needs_logits(calibrator):
        return _logit_method(estimator)
    return "predict_proba" if has_proba else "decision_function"


def _to_calibrator_input(response, method, calibrator):
    """Convert a response to what the calibrator takes, when they differ.

    Logit calibrators given probabilities (an estimator without
    ``decision_function``) get their logarithm, floored at the smallest
    normal float: softmax(log p) = p, and no -inf reaches the calibrator.
    Probability calibrators given decision scores (an estimator without
    ``predict_proba``) get their softmax (sigmoid for binary scores).
    """
    response = np.asarray(response, dtype=np.float64)
    if _needs_logits(calibrator) and method == "predict_proba":
        return log_floored(response)
    if not _needs_logits(calibrator) and method != "predict_proba":
        return softmax_rows(binary_logits(response))
    return response


def _map_to_classes(response, method, estimator_classes, classes):
    """A response of an estimator that saw a subset of ``classes`` (a training
    split lacking a class), mapped onto all of them as scikit-learn's
    ``CalibratedClassifierCV`` does: the missing classes get probability 0
    (their logits ``log(tiny)``, the logarithm of the smallest normal float)."""
    if estimator_classes is None or np.array_equal(estimator_classes, classes):
        return response
    response = np.asarray(response, dtype=np.float64)
    if method == "predict_proba":
        proba = response
    else:
        proba = softmax_rows(binary_logits(response))
    full = np.zeros((response.shape[0], len(classes)))
    full[:, np.searchsorted(classes, estimator_classes)] = proba
    if method == "predict_proba":
        return full
    log_p = log_floored(full)
    if method == "decision_function" and len(classes) == 2:
        return log_p[:, 1] - log_p[:, 0]
    return log_p


def _responses(estimator, X, methods, classes):
    """``{method: response on X}``, mapped onto ``classes``."""
    est_classes = getattr(estimator, "classes_", None)
    return {
        m: _map_to_classes(getattr(estimator, m)(X), m, est_classes, classes)
        for m in methods
    }


def _index_params(params, indices, n_samples):
    """Fit parameters restricted to ``indices`` where they are per-sample."""
    out = {}
    for key, value in params.items():
        if value is not None and hasattr(value, "__len__") and len(value) == n_samples:
            out[key] = _safe_indexing(value, indices)
        else:
            out[key] = value
    return out


def _fit_fold(estimator, X, y, train, test, fit_params, methods, classes):
    """Fit ``estimator`` on the training rows; its responses on the test rows."""
    n_samples = len(y)
    estimator.fit(
        _safe_indexing(X, train),
        y[train],
        **_index_params(fit_params, train, n_samples),
    )
    return estimator, _responses(estimator, _safe_indexing(X, test), methods, classes)


class _PriorThen:
    """A fitted prior correction followed by a calibrator (or none).

    Probability calibrators get the corrected probabilities; logit
    calibrators the shifted logits ``z + log(target / train)``; None returns
    the corrected probabilities.
    """

    def __init__(self, prior, calibrator):
        self.prior = prior
        self.calibrator = calibrator
        self._input = PROBABILITIES if calibrator is None else calibrator._input

    def _corrected(self, scores):
        if self._input == LOGITS:
            return self.prior.shift_logits(scores)
        return self.prior.predict_proba(scores)

    def fit(self, scores, y, sample_weight=None):
        proba = _Inputs.from_scores(scores, self._input).probabilities
        self.prior = clone(self.prior).fit(proba, y, sample_weight)
        self.classes_ = self.prior.classes_
        if self.calibrator is not None:
            self.calibrator = clone(self.calibrator).fit(
                self._corrected(scores), y, sample_weight=sample_weight
            )
            self.classes_ = self.calibrator.classes_
        return self

    def predict_proba(self, scores):
        corrected = self._corrected(scores)
        if self.calibrator is None:
            return corrected
        return self.calibrator.predict_proba(corrected)


class CalibratedClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A classifier whose probabilities go through a post-hoc calibrator.

    The pattern of scikit-learn's ``CalibratedClassifierCV``, for any
    calibrator of :mod:`sklcalib.calibration`. Logit calibrators (temperature,
    vector, matrix, Platt) get the estimator's ``predict_logits`` (all the
    logits of a :class:`~sklcalib.net.NetClassifier`) or, without one, its
    ``decision_function`` (one column for scikit-learn's binary classifiers);
    probability calibrators (histogram, isotonic, BBQ, ENIR, beta) its
    ``predict_proba``.

    Parameters
    ----------
    estimator : estimator instance
        The classifier to calibrate. Wrap an already fitted classifier in
        ``sklearn.frozen.FrozenEstimator`` to calibrate it on the data given
        to ``fit`` without refitting it.
    calibrator : calibrator instance, str or None, default=None
        The calibrator; cloned for each fit, never modified. None means a
        fresh :class:`~sklcalib.calibration.TemperatureScaler`. A name of
        :data:`~sklcalib.calibration.CALIBRATORS` (``"temperature"``,
        ``"platt"``, ``"isotonic"``, ``"beta"``, ``"sms"``, ...; scikit-learn's
        ``"sigmoid"`` is ``"platt"``) means a fresh calibrator of that class.
        ``"passthrough"`` means no calibration: the estimator is fitted on
        all the data and its own ``predict_proba`` is returned, so that a
        search can compare calibrators with none. ``"auto"`` chooses among
        no calibration and the calibrators by
        :func:`~sklcalib.calibration.select_calibrator` on the held-out
        scores (out-of-fold scores, or all the scores of a frozen model):
        no calibration is kept unless a calibrator is better by more than
        one standard error of the paired fold differences.
    cv : int, cross-validation generator or iterable, default=5
        Splits of the training data, as in ``CalibratedClassifierCV``
        (an integer means stratified k-fold). Not used when the estimator is
        a ``FrozenEstimator`` and ``ensemble`` resolves to False: all data
        then calibrates the frozen model (with ``calibrator="auto"``, ``cv``
        is then the selection's folds of the calibration scores).
    ensemble : bool or "auto", default="auto"
        True: for each split, fit a clone of the estimator on the training
        part and a clone of the calibrator on its scores on the held-out
        part; ``predict_proba`` averages the calibrated probabilities of the
        pairs. False: fit one calibrator on out-of-fold scores and refit the
        estimator on all data. "auto": False for a ``FrozenEstimator``, True
        otherwise (as scikit-learn 1.6+ does).
    n_jobs : int, default=None
        Folds fitted in parallel by joblib (as ``CalibratedClassifierCV``);
        None means 1 unless in a ``joblib.parallel_backend`` context, -1
        all processors.
    prior : PriorCorrection or None, default=None
        A :class:`~sklcalib.calibration.PriorCorrection` applied to the
        scores before the calibrator (fitted on each calibration set; logit
        calibrators get the logits shifted by ``log(target / train)``).
        With ``calibrator="passthrough"`` the corrected probabilities are
        returned.
    check_calibration : bool, default=True
        Warn with :class:`~sklcalib.calibration.CalibrationWarning` when a
        calibration set is small for the calibrator's flexibility, and when
        the calibrator's cross-validated log-loss on the calibration scores
        (the out-of-fold scores in ensemble mode) is worse than the raw
        scores' by more than the two-sided 95 % Student quantile (folds - 1
        degrees of freedom) times the standard error of the paired fold
        differences and by more than 1 % of the raw log-loss (the rule of
        :class:`~sklcalib.calibration.CalibrationWarning`). Costs ``cv`` more fits of
        the calibrator (not of the estimator). Not done for "auto" and
        "passthrough".

    Attributes
    ----------
    calibrated_classifiers_ : list of tuple
        ``(fitted estimator, fitted calibrator)`` pairs; with no calibration
        (``"passthrough"``, or chosen by ``"auto"``) one pair whose
        calibrator is None. With ``prior``, the calibrator is a private
        object holding the fitted correction (``.prior``) and calibrator
        (``.calibrator``).
    selected_calibrator_ : str
        With ``calibrator="auto"``: the chosen candidate's name.
    cv_results_ : dict of list
        With ``calibrator="auto"``: every candidate's cross-validated
        log-loss, Brier score and ECE with their spread (see
        :class:`~sklcalib.calibration.CalibratorSelection`).
    selection_ : CalibratorSelection
        With ``calibrator="auto"``: the whole selection (``summary()`` prints
        the table).
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of features seen by the estimator (when it records it).

    See Also
    --------
    select_calibrator : The selection behind ``calibrator="auto"``.
    PriorCorrection : The ``prior`` option.

    Notes
    -----
    An estimator without ``decision_function`` feeds a logit calibrator the
    logarithm of its probabilities; an estimator without ``predict_proba``
    feeds a probability calibrator the softmax of its decision scores.

    A fold estimator whose training split lacks a class is mapped onto the
    full set of classes as scikit-learn does (probability 0 for the missing
    classes; a ``UserWarning`` says so). Every class must still appear in
    every *calibration* split: with an integer ``cv``, each class needs at
    least ``cv`` samples.

    Metadata routing follows ``CalibratedClassifierCV``: with
    ``sklearn.set_config(enable_metadata_routing=True)``, ``sample_weight``
    and other ``fit`` parameters reach the estimator only where it requests
    them (``set_fit_request``), and ``groups`` reach a splitter that asks for
    them, in both ensemble modes; the calibrator always gets
    ``sample_weight``. Without routing, ``sample_weight`` goes to the
    estimator when its ``fit`` takes it and ``**fit_params`` always do.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklcalib.calibration import CalibratedClassifier, TemperatureScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), LogisticRegression())
    >>> clf = CalibratedClassifier(model, TemperatureScaler(), cv=3).fit(X, y)
    >>> len(clf.calibrated_classifiers_)
    3
    >>> clf.predict_proba(X[:2]).sum(axis=1)
    array([1., 1.])
    >>> auto = CalibratedClassifier(model, "auto", cv=3).fit(X, y)
    >>> auto.selected_calibrator_ in auto.cv_results_["candidate"]
    True
    """

    def __init__(
        self,
        estimator,
        calibrator=None,
        cv=5,
        ensemble="auto",
        n_jobs=None,
        prior=None,
        check_calibration=True,
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.cv = cv
        self.ensemble = ensemble
        self.n_jobs = n_jobs
        self.prior = prior
        self.check_calibration = check_calibration

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the estimator validates X: it decides which input is accepted
        tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        return tags

    def _check_params(self):
        if self.estimator is None or not hasattr(self.estimator, "fit"):
            raise ValueError(f"estimator must be a classifier; got {self.estimator!r}.")
        calibrator = self._calibrator()
        if not isinstance(calibrator, str) and not (
            hasattr(calibrator, "fit") and hasattr(calibrator, "predict_proba")
        ):
            raise ValueError(
                "calibrator must have fit and predict_proba methods, or be "
                f'"auto", "passthrough" or None; got {self.calibrator!r}.'
            )
        if not (isinstance(self.ensemble, bool | np.bool_) or self.ensemble == "auto"):
            raise ValueError(
                f'ensemble must be True, False or "auto"; got {self.ensemble!r}.'
            )
        if self.prior is not None and not isinstance(self.prior, PriorCorrection):
            raise ValueError(
                f"prior must be a PriorCorrection or None; got {self.prior!r}."
            )
        if not isinstance(self.check_calibration, bool | np.bool_):
            raise ValueError(
                "check_calibration must be True or False; got "
                f"{self.check_calibration!r}."
            )
        return calibrator

    def _calibrator(self):
        """The calibrator to clone: None is a fresh TemperatureScaler."""
        if self.calibrator is None:
            return TemperatureScaler()
        if isinstance(self.calibrator, str):
            if self.calibrator in (PASSTHROUGH, AUTO):
                return self.calibrator
            return CALIBRATORS[canonical_name(self.calibrator)].estimator()
        return self.calibrator

    def get_metadata_routing(self):
        """Get the metadata routing of this object (as ``CalibratedClassifierCV``).

        Returns
        -------
        routing : MetadataRouter
            ``fit`` routes to the estimator's ``fit`` and the splitter's
            ``split``; ``sample_weight`` is also consumed here, by the
            calibrator.
        """
        return (
            MetadataRouter(owner=self)
            .add_self_request(self)
            .add(
                estimator=self.estimator,
                method_mapping=MethodMapping().add(caller="fit", callee="fit"),
            )
            .add(
                splitter=self.cv,
                method_mapping=MethodMapping().add(caller="fit", callee="split"),
            )
        )

    def _routed_params(self, sample_weight, w, fit_params, frozen):
        if get_config().get("enable_metadata_routing", False):
            routed = process_routing(
                self, "fit", sample_weight=sample_weight, **fit_params
            )
            return dict(routed.estimator.fit), dict(routed.splitter.split)
        params = dict(fit_params)
        if w is not None and not frozen and self._estimator_takes_weights():
            params["sample_weight"] = w
        return params, {}

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the estimator(s) and the calibrator(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, as the estimator takes it.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights, split with the folds: passed to the
            calibrator's ``fit`` and to the estimator's ``fit`` where it
            accepts ``sample_weight`` (otherwise the estimator is fitted
            unweighted, with a warning, as ``CalibratedClassifierCV`` does);
            with metadata routing enabled, to the estimator only where it
            requests it.
        **fit_params : dict
            Parameters of the estimator's ``fit`` (routed when metadata
            routing is enabled), split with the folds where per-sample.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        spec = self._check_params()
        check_classification_targets(y)
        X, y = indexable(X, y)
        y = np.asarray(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(
                "y must hold at least two classes; got 1 class: "
                f"{self.classes_.tolist()}."
            )
        for name in ("selected_calibrator_", "cv_results_", "selection_"):
            self.__dict__.pop(name, None)
        w = check_sample_weight(sample_weight, y.shape[0])
        frozen = isinstance(self.estimator, FrozenEstimator)
        ensemble = self.ensemble
        if ensemble == "auto":
            ensemble = not frozen
        est_params, split_params = self._routed_params(
            sample_weight, w, fit_params, frozen
        )
        methods = self._methods(spec)

        if isinstance(spec, str) and spec == PASSTHROUGH:
            # no calibration: one estimator fitted on all the data
            estimator = self._fit_all(X, y, est_params, frozen)
            pair_cal = None
            if self.prior is not None:
                responses = _responses(estimator, X, methods, self.classes_)
                pair_cal = self._fit_calibrator(PASSTHROUGH, responses, y, w)
            pairs = [(estimator, pair_cal)]
        elif frozen and not ensemble:
            # a frozen model is already fitted: all data calibrates it
            estimator = clone(self.estimator)
            responses = _responses(estimator, X, methods, self.classes_)
            spec = self._resolve(spec, responses, y, w)
            if isinstance(spec, str):  # "auto" chose no calibration
                pairs = [(estimator, self._prior_only(X, y, w, estimator))]
            else:
                pairs = [(estimator, self._fit_calibrator(spec, responses, y, w))]
        else:
            cv = self._check_cv(y)
            splits = list(cv.split(X, y, **split_params))
            folds = Parallel(n_jobs=self.n_jobs)(
                delayed(_fit_fold)(
                    clone(self.estimator),
                    X,
                    y,
                    train,
                    test,
                    est_params,
                    methods,
                    self.classes_,
                )
                for train, test in splits
            )
            for estimator, _ in folds:
                self._warn_missing_classes(estimator, stacklevel=3)
            if ensemble:
                pooled, order = self._pooled(folds, splits, len(y))
                spec = self._resolve(spec, pooled, y[order], _take(w, order))
                if isinstance(spec, str):  # "auto" chose no calibration
                    estimator = self._fit_all(X, y, est_params, frozen)
                    pairs = [(estimator, self._prior_only(X, y, w, estimator))]
                else:
                    pairs = [
                        (
                            estimator,
                            self._fit_calibrator(
                                spec, responses, y[test], _take(w, test)
                            ),
                        )
                        for (estimator, responses), (_, test) in zip(
                            folds, splits, strict=True
                        )
                    ]
            else:
                pooled, order = self._pooled(folds, splits, len(y), partition=True)
                spec = self._resolve(spec, pooled, y, w)
                estimator = self._fit_all(X, y, est_params, frozen)
                if isinstance(spec, str):
                    pairs = [(estimator, self._prior_only(X, y, w, estimator))]
                else:
                    pairs = [(estimator, self._fit_calibrator(spec, pooled, y, w))]
        self.calibrated_classifiers_ = pairs
        first = pairs[0][0]
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, name):
                setattr(self, name, getattr(first, name))
        return self

    # -- the pieces of fit ------------------------------------------------

    def _methods(self, spec):
        """The estimator methods whose responses the calibration needs."""
        est = self.estimator
        if isinstance(spec, str) and spec == AUTO:
            methods = {_logit_method(est), _response_method(est, PROBE_PROBA)}
            if hasattr(est, "predict_proba"):
                methods.add("predict_proba")
            return sorted(methods)
        if isinstance(spec, str):  # passthrough
            return [_response_method(est, PASSTHROUGH)]
        return [_response_method(est, spec)]

    def _fit_all(self, X, y, est_params, frozen):
        estimator = clone(self.estimator)
        if not frozen:
            estimator.fit(X, y, **est_params)
            self._warn_missing_classes(estimator, stacklevel=4)
        return estimator

    def _warn_missing_classes(self, estimator, stacklevel):
        classes = getattr(estimator, "classes_", None)
        if classes is None or np.array_equal(np.asarray(classes), self.classes_):
            return
        seen = set(np.asarray(classes).tolist())
        missing = sorted(set(self.classes_.tolist()) - seen)
        warnings.warn(
            f"a training split lacks class(es) {missing}: its estimator gives them "
            "probability 0 (mapped onto all classes as scikit-learn does); use a "
            "cv whose training splits hold every class.",
            UserWarning,
            stacklevel=stacklevel,
        )

    def _pooled(self, folds, splits, n_samples, partition=False):
        """The held-out responses of all folds in one array per method, in
        the order of the test rows (``order``); with ``partition``, in the
        rows' own order (every row held out exactly once, as
        ``cross_val_predict`` requires)."""
        order = np.concatenate([test for _, test in splits])
        pooled = {
            m: np.concatenate([responses[m] for _, responses in folds])
            for m in folds[0][1]
        }
        if partition:
            if len(order) != n_samples or not np.array_equal(
                np.sort(order), np.arange(n_samples)
            ):
                raise ValueError(
                    "ensemble=False needs a cv whose test splits partition the "
                    "rows (every row held out exactly once), as cross_val_predict "
                    "does."
                )
            inverse = np.empty_like(order)
            inverse[order] = np.arange(n_samples)
            pooled = {m: r[inverse] for m, r in pooled.items()}
            order = np.arange(n_samples)
        return pooled, order

    def _inputs(self, responses):
        """The responses as select_calibrator's inputs (logits, probabilities
        and the uncalibrated probabilities)."""
        est = self.estimator
        logit_m = _logit_method(est)
        proba_m = _response_method(est, PROBE_PROBA)
        logits = _to_calibrator_input(responses[logit_m], logit_m, PROBE_LOGITS)
        if logits.ndim == 2 and logits.shape[1] == 2 and logit_m == "predict_proba":
            logits = logits[:, 1] - logits[:, 0]
        proba = _to_calibrator_input(responses[proba_m], proba_m, PROBE_PROBA)
        passthrough = responses.get("predict_proba")
        if passthrough is not None:
            passthrough = np.asarray(passthrough, dtype=np.float64)
            if passthrough.ndim == 1:
                passthrough = np.column_stack([1 - passthrough, passthrough])
        return _Inputs(logits, proba, passthrough)

    def _resolve(self, spec, responses, y, w):
        """The calibrator to fit: "auto" runs the selection (and records it);
        an explicit calibrator is checked for harm."""
        if isinstance(spec, str) and spec == AUTO:
            return self._select(responses, y, w)
        if self.check_calibration and not isinstance(spec, str):
            method = _response_method(self.estimator, spec)
            scores = _to_calibrator_input(responses[method], method, spec)
            response = LOGITS if _needs_logits(spec) else PROBABILITIES
            if self.prior is not None:
                proba = _Inputs.from_scores(scores, response).probabilities
                prior = clone(self.prior).fit(proba, y, w)
                scores = (
                    prior.shift_logits(scores)
                    if response == LOGITS
                    else prior.predict_proba(scores)
                )
            inputs = _Inputs.from_scores(scores, response)
            # stacklevel 5: the user's call of fit
            calibration_size_warning(spec, y, stacklevel=5)
            calibration_harm_warning(
                spec, inputs, y, w, cv=_n_folds(self.cv) or 5, stacklevel=5
            )
        return spec

    def _select(self, responses, y, w):
        y = np.ravel(y)  # a column vector of labels, as scikit-learn accepts
        inputs = self._inputs(responses)
        classes, y_idx = np.unique(y, return_inverse=True)
        if self.prior is not None:
            prior = _PriorThen(self.prior, None).fit(inputs.probabilities, y, w).prior
            inputs = _Inputs(
                prior.shift_logits(inputs.logits),
                prior.predict_proba(inputs.probabilities),
                None
                if inputs.passthrough is None
                else prior.predict_proba(inputs.passthrough),
            )
        selection = _select(
            inputs,
            y,
            y_idx,
            len(classes),
            w,
            candidates=None,
            cv=self.cv if isinstance(self.cv, int) else _n_folds(self.cv),
            random_state=None,
            rule="one_se",
            min_events_per_parameter=10,
        )
        self.selection_ = selection
        self.selected_calibrator_ = selection.name
        self.cv_results_ = selection.cv_results
        if selection.calibrator is None:
            return PASSTHROUGH
        return clone(selection.calibrator)

    def _fit_calibrator(self, spec, responses, y, w):
        if isinstance(spec, str):  # passthrough with a prior
            method = "predict_proba"
            calibrator = _PriorThen(self.prior, None)
        else:
            method = _response_method(self.estimator, spec)
            calibrator = (
                clone(spec) if self.prior is None else _PriorThen(self.prior, spec)
            )
        scores = _to_calibrator_input(responses[method], method, calibrator)
        calibrator = calibrator.fit(scores, y, sample_weight=w)
        if not np.array_equal(calibrator.classes_, self.classes_):
            raise ValueError(
                "a calibration split holds classes "
                f"{calibrator.classes_.tolist()}, not all of {self.classes_.tolist()}; "
                "use a cv whose held-out splits hold every class."
            )
        return calibrator

    def _prior_only(self, X, y, w, estimator):
        if self.prior is None:
            return None
        responses = _responses(estimator, X, ["predict_proba"], self.classes_)
        return self._fit_calibrator(PASSTHROUGH, responses, y, w)

    def _check_cv(self, y):
        n_folds = _n_folds(self.cv)
        if n_folds is not None:
            counts = np.unique(y, return_counts=True)[1]
            if np.any(counts < n_folds):
                raise ValueError(
                    f"cv={self.cv!r} asks for {n_folds} folds but a class of y has "
                    f"only {counts.min()} samples; every class needs at least "
                    f"{n_folds} so that each split holds all classes."
                )
        return check_cv(self.cv, y, classifier=True)

    def _estimator_takes_weights(self):
        if has_fit_parameter(self.estimator, "sample_weight"):
            return True
        warnings.warn(
            f"{type(self.estimator).__name__}.fit does not accept sample_weight: "
            "the estimator is fitted without the weights; the calibrator uses "
            "them.",
            UserWarning,
            stacklevel=4,
        )
        return False

    def predict_proba(self, X):
        """Calibrated probabilities, averaged over the calibrated pairs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as the estimator takes them.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        check_is_fitted(self)
        first_estimator, first_calibrator = self.calibrated_classifiers_[0]
        if first_calibrator is None:  # no calibration
            proba = first_estimator.predict_proba(X)
            return _map_to_classes(
                proba,
                "predict_proba",
                getattr(first_estimator, "classes_", None),
                self.classes_,
            )
        total = None
        for estimator, calibrator in self.calibrated_classifiers_:
            method = _response_method(estimator, calibrator)
            (response,) = _responses(estimator, X, [method], self.classes_).values()
            scores = _to_calibrator_input(response, method, calibrator)
            proba = calibrator.predict_proba(scores)
            total = proba if total is None else total + proba
        return total / len(self.calibrated_classifiers_)

    def predict(self, X):
        """Predict the class with the largest calibrated probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, as the estimator takes them.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The label of ``classes_`` with the largest ``predict_proba`` value
            for each sample.
        """
        proba = self.predict_proba(X)  # first: NotFittedError before classes_
        return self.classes_[np.argmax(proba, axis=1)]


class _Probe:
    """Stands for "a calibrator of this input kind" in the method lookups."""

    def __init__(self, kind):
        self._input = kind


PROBE_LOGITS = _Probe(LOGITS)
PROBE_PROBA = _Probe(PROBABILITIES)


def _take(w, rows):
    return None if w is None else w[rows]


def _n_folds(cv):
    if isinstance(cv, int | np.integer) and not isinstance(cv, bool):
        return int(cv)
    return getattr(cv, "n_splits", None)
