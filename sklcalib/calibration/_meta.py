"""CalibratedClassifier: scikit-learn's CalibratedClassifierCV for any calibrator."""

import inspect
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

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._scores import binary_logits, log_floored
from sklcalib._utils._validation import _outside_stacklevel, check_sample_weight

from ._base import LOGITS, PROBABILITIES, BaseCalibrator, as_2d, softmax_rows
from ._composed import PriorThen, as_probabilities, fit_on_classes, logits_of
from ._prior import PriorCorrection
from ._registry import (
    AUTO,
    CALIBRATORS,
    PASSTHROUGH,
    canonical_name,
    needs_logits,
    spec_of,
)
from ._select import (
    _CALIBRATOR_ADVICE,
    _PRIOR_ADVICE,
    PRIOR,
    CalibratorSearchCV,
    _Inputs,
    _row_log_loss,
    _warn_harm,
    calibration_size_warning,
    floor_probabilities,
    harm_check,
)
from ._temperature import TemperatureScaler

#: what CalibratedClassifier fits on each calibration part: no calibration
NO_CALIBRATION = (None, False)


class _LogitsTaker:
    """Stands for a calibrator fitted on logits (a segment calibrator) where
    the response conversions ask which scores it takes."""

    _input = LOGITS


LOGITS_TAKER = _LogitsTaker()


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
    if needs_logits(calibrator):
        return _logit_method(estimator)
    return "predict_proba" if has_proba else "decision_function"


def _to_calibrator_input(response, method, calibrator):
    """Convert a response to what the calibrator takes, when they differ.

    Logit calibrators given probabilities (an estimator without
    ``decision_function``) get their logarithm, floored at the smallest
    normal float: softmax(log p) = p, and no -inf reaches the calibrator; for
    two classes, the log-odds (one margin, as a binary decision_function).
    Probability calibrators given decision scores (an estimator without
    ``predict_proba``) get their softmax (sigmoid for binary scores).
    """
    response = np.asarray(response, dtype=np.float64)
    if needs_logits(calibrator) and method == "predict_proba":
        return logits_of(as_probabilities(response, PROBABILITIES))
    if not needs_logits(calibrator) and method != "predict_proba":
        return as_probabilities(response, LOGITS)
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
        :class:`~sklcalib.calibration.CalibratorSearchCV` on the held-out
        scores (out-of-fold scores, or all the scores of a frozen model):
        no calibration is kept unless a calibrator is better by more than
        one standard error of the paired fold differences, and on a set too
        small to tell (or separated by the scores) it is kept, with the
        reason in ``selection_.reason_``.
    cv : int, cross-validation generator or iterable, default=5
        Splits of the training data, as in ``CalibratedClassifierCV``
        (an integer means stratified k-fold). Not used when the estimator is
        a ``FrozenEstimator`` and ``ensemble`` resolves to False: all data
        then calibrates the frozen model. The folds of the selection
        (``"auto"``) and of the harm check on the calibration scores: for an
        integer, the selection's own shuffled k-fold; for a splitter or an
        iterable, its held-out parts (a ``GroupKFold`` with routed
        ``groups`` keeps each group in one fold there too).
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
        returned. With ``"auto"``, "passthrough" is the *uncorrected*
        scores and the correction alone is the candidate ``"prior"``, so the
        selection can find that the correction does harm. A
        :class:`~sklcalib.calibration.CalibrationWarning` says when the
        correction makes the scores worse (``check_calibration``).
    check_calibration : bool or "auto", default="auto"
        Warn with :class:`~sklcalib.calibration.CalibrationWarning` when a
        calibration set is small for the calibrator's flexibility, and when
        the calibrator's cross-validated log-loss on the calibration scores
        (the out-of-fold scores in ensemble mode) is worse than the raw
        scores' by more than the two-sided 95 % Student quantile (folds - 1
        degrees of freedom) times the standard error of the paired fold
        differences and by more than 1 % of the raw log-loss (the rule of
        :class:`~sklcalib.calibration.CalibrationWarning`); the same for
        ``prior`` against the uncorrected scores. In ensemble mode it reuses
        the fitted pairs (on each held-out part, the other parts'
        calibrators, averaged, against the raw scores): no extra fit. With a
        frozen estimator or ``ensemble=False``, True refits the calibrator
        on ``cv`` folds (not the estimator). "auto" (the default) skips
        those refits where they cannot warn: for a scaling calibrator
        (temperature, Platt, vector, matrix, Dirichlet, SMS, SVS, beta,
        quadratic, ensemble temperature) and an integer ``cv``, when the
        calibrator fitted on all the rows, scored on them, plus twice the
        optimism Akaike's argument predicts for its parameters
        (``p / n_train + p / n`` nats a row), is within 1 % of the raw
        log-loss; otherwise, and with ``prior``, it is True.
        ``calibrator="auto"`` needs no check.
    segments : list of str or int, default=None
        Columns of ``X`` (names of a DataFrame's columns, or indices) given
        to a segment-aware calibrator
        (:class:`~sklcalib.calibration.SegmentCalibrator`) beside the
        estimator's scores, at fit and at predict. The calibrator must then
        be a :class:`~sklcalib.calibration.SegmentCalibrator` (or another
        whose ``fit`` and ``predict_proba`` take ``segments=``), None (a
        fresh ``SegmentCalibrator()``) or ``"auto"`` (a
        ``SegmentCalibrator(global_calibrator="auto")``: no calibration, the
        global calibrator that :class:`CalibratorSearchCV` picks and the two
        segment maps compared by cross-validated log-loss, a segment map
        kept only when it beats the others by more than one standard error).
        Its own selection replaces the harm check; ``prior`` is not
        supported with it. None: the calibrator sees the scores only.

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
        :class:`~sklcalib.calibration.CalibratorSearchCV`).
    selection_ : CalibratorSearchCV
        With ``calibrator="auto"``: the fitted selection on the calibration
        scores (``summary()`` prints the table, ``reason_`` says why).
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
    classes; a ``UserWarning`` says so). A *calibration* split that lacks a
    class fits the calibrator on the classes it holds: the missing classes
    keep the estimator's probability and the others share the rest (a split
    of one class is not calibrated); a ``UserWarning`` says so. Unshuffled
    ``KFold`` on label-sorted rows therefore fits, as with
    ``CalibratedClassifierCV``, though its probabilities are only partly
    calibrated. With an integer ``cv``, each class needs at least ``cv``
    samples (stratified folds hold every class).

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
        check_calibration="auto",
        segments=None,
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.cv = cv
        self.ensemble = ensemble
        self.n_jobs = n_jobs
        self.prior = prior
        self.check_calibration = check_calibration
        self.segments = segments

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
        if not (
            isinstance(self.check_calibration, bool | np.bool_)
            or (
                isinstance(self.check_calibration, str)
                and self.check_calibration == "auto"
            )
        ):
            raise ValueError(
                'check_calibration must be True, False or "auto"; got '
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
            name = canonical_name(self.calibrator, special=(AUTO, PASSTHROUGH))
            return CALIBRATORS[name].estimator()
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
        if self.segments is not None:  # a segment-aware calibrator
            return self._fit_segmented(X, y, w, sample_weight, fit_params)
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
            pairs = [(estimator, self._prior_only(X, y, w, estimator))]
        elif frozen and not ensemble:
            # a frozen model is already fitted: all data calibrates it
            estimator = clone(self.estimator)
            responses = _responses(estimator, X, methods, self.classes_)
            if isinstance(self.cv, int | np.integer) or _is_splits(self.cv):
                selection_cv = self.cv
            else:  # a splitter, on these rows (routed groups included)
                selection_cv = list(self.cv.split(X, y, **split_params))
            choice, fitted = self._resolve(spec, responses, y, w, selection_cv)
            if fitted is None:
                fitted = self._fit_choice(choice, responses, y, w)
            pairs = [(estimator, fitted)]
        else:
            cv = self._check_cv(y)
            splits = list(cv.split(X, y, **split_params))
            folds = self._fit_folds(X, y, splits, est_params, methods)
            for estimator, _ in folds:
                self._warn_missing_classes(estimator, stacklevel=3)
            pooled, order = self._pooled(folds, splits, len(y), partition=not ensemble)
            # the selection's and the harm check's folds: an integer cv gives
            # the selection its own shuffled k-fold; a splitter or iterable,
            # the held-out parts it made (their groups stay together)
            selection_cv = self.cv
            if not isinstance(self.cv, int | np.integer):
                selection_cv = _pooled_splits(splits, order)
            y_pooled, w_pooled = y[order], _take(w, order)
            if ensemble:
                if _is_auto(spec):
                    choice, _ = self._resolve(
                        spec, pooled, y_pooled, w_pooled, selection_cv
                    )
                else:
                    choice = (spec, self.prior is not None)
                if choice[0] is None:  # no calibrator: one estimator on all data
                    estimator = self._fit_all(X, y, est_params, frozen)
                    prior = self._prior_only(X, y, w, estimator) if choice[1] else None
                    pairs = [(estimator, prior)]
                else:
                    pairs = [
                        (
                            estimator,
                            self._fit_choice(
                                choice, responses, y[test], _take(w, test)
                            ),
                        )
                        for (estimator, responses), (_, test) in zip(
                            folds, splits, strict=True
                        )
                    ]
                    if self.check_calibration and not _is_auto(spec):
                        calibration_size_warning(
                            spec,
                            y,
                            parts=[test for _, test in splits],
                            sample_weight=w,
                        )
                        self._check_pairs(spec, pairs, folds, splits, y, w)
            else:
                choice, fitted = self._resolve(spec, pooled, y, w, selection_cv)
                estimator = self._fit_all(X, y, est_params, frozen)
                if fitted is None:
                    fitted = self._fit_choice(choice, pooled, y, w)
                pairs = [(estimator, fitted)]
        return self._keep(pairs)

    # -- the pieces of fit ------------------------------------------------

    def _fit_folds(self, X, y, splits, est_params, methods):
        """(fitted estimator, held-out responses of ``methods``) per split,
        the splits fitted in parallel (``n_jobs``)."""
        return Parallel(n_jobs=self.n_jobs)(
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

    def _keep(self, pairs):
        """Store the fitted (estimator, calibrator) pairs and the input
        attributes of the first estimator; return self."""
        self.calibrated_classifiers_ = pairs
        first = pairs[0][0]
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, name):
                setattr(self, name, getattr(first, name))
        return self

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

    def _resolve(self, spec, responses, y, w, selection_cv):
        """What to fit on the calibration scores, as ``((calibrator or None,
        with the prior correction), fitted or None)``: "auto" runs the
        selection (recorded, and its refit returned); an explicit calibrator
        is checked for harm on the selection's folds."""
        if _is_auto(spec):
            search = CalibratorSearchCV(cv=selection_cv, prior=self.prior)
            search._fit_inputs(self._inputs(responses), y, w)
            self.selection_ = search
            self.selected_calibrator_ = search.best_candidate_
            self.cv_results_ = search.cv_results_
            name = search.best_candidate_
            if name == PASSTHROUGH:
                return NO_CALIBRATION, None
            if name == PRIOR:
                return (None, True), search.best_estimator_
            return (CALIBRATORS[name].estimator(), self.prior is not None), (
                search.best_estimator_
            )
        choice, fitted = (spec, self.prior is not None), None
        if self.check_calibration:
            method = _response_method(self.estimator, spec)
            scores = _to_calibrator_input(responses[method], method, spec)
            kind = LOGITS if needs_logits(spec) else PROBABILITIES
            calibration_size_warning(spec, y, sample_weight=w)
            inputs = None
            if (
                self.check_calibration == "auto"
                and self.prior is None
                and _may_skip_refits(spec, selection_cv)
            ):
                # the fit the model needs anyway, and its in-sample log-loss
                fitted = self._fit_choice(choice, responses, y, w)
                losses = getattr(fitted, "_fit_nll", None)  # the solver's
                if losses is None:
                    inputs = _Inputs.from_scores(scores, kind)
                    y_idx = np.searchsorted(self.classes_, y)
                    losses = _in_sample_log_losses(spec, fitted, inputs, y_idx, w)
                n_parameters = spec_of(spec).n_parameters(len(self.classes_))
                if _refits_cannot_warn(
                    losses,
                    n_parameters * len(self.classes_),
                    len(y),
                    w,
                    selection_cv,
                ):
                    return choice, fitted
            if inputs is None:
                inputs = _Inputs.from_scores(scores, kind)
            harm_check(spec, inputs, y, w, cv=selection_cv, prior=self.prior)
        return choice, fitted

    def _inputs(self, responses):
        """The responses as the selection's inputs (logits, probabilities
        and the uncalibrated probabilities)."""
        est = self.estimator
        logit_m = _logit_method(est)
        proba_m = _response_method(est, PROBE_PROBA)
        logits = _to_calibrator_input(responses[logit_m], logit_m, PROBE_LOGITS)
        proba = _to_calibrator_input(responses[proba_m], proba_m, PROBE_PROBA)
        passthrough = responses.get("predict_proba")
        if passthrough is not None:
            passthrough = as_probabilities(passthrough, PROBABILITIES)
        return _Inputs(logits, as_probabilities(proba, PROBABILITIES), passthrough)

    def _fit_choice(self, choice, responses, y, w):
        """Fit a choice of :meth:`_resolve` on one calibration part: a fresh
        calibrator (behind the prior correction when chosen), fitted on the
        classes the part holds; None for no calibration."""
        calibrator, with_prior = choice
        if calibrator is None and not with_prior:
            return None
        if with_prior:
            target = PriorThen(self.prior, None if calibrator is None else calibrator)
        else:
            target = clone(calibrator)
        method = _response_method(self.estimator, target)
        scores = _to_calibrator_input(responses[method], method, target)
        missing = sorted(set(self.classes_.tolist()) - set(np.unique(y).tolist()))
        if missing:
            if with_prior:
                raise ValueError(
                    f"a calibration split lacks class(es) {missing}; the prior "
                    "correction needs every class in each: use a cv whose "
                    "held-out splits hold every class (e.g. StratifiedKFold)."
                )
            warnings.warn(
                f"a calibration split lacks class(es) {missing}: its calibrator is "
                "fitted on the classes it holds and the missing ones keep the "
                "estimator's probability (none when it holds one class), as "
                "scikit-learn does; use a cv whose held-out splits hold every "
                "class (e.g. StratifiedKFold).",
                UserWarning,
                stacklevel=_outside_stacklevel(),
            )
        return fit_on_classes(target, scores, y, self.classes_, w)

    def _prior_only(self, X, y, w, estimator):
        """The prior correction alone, fitted on the estimator's responses on
        ``X`` (None without one); checked for harm on them."""
        if self.prior is None:
            return None
        responses = _responses(estimator, X, ["predict_proba"], self.classes_)
        if self.check_calibration:
            proba = as_probabilities(responses["predict_proba"], PROBABILITIES)
            inputs = _Inputs(logits_of(proba), proba, proba)
            harm_check(None, inputs, y, w, cv=self.cv, prior=self.prior)
        return self._fit_choice((None, True), responses, y, w)

    def _check_pairs(self, spec, pairs, folds, splits, y, w):
        """The harm check of ensemble mode, on the fits it already has: on
        each held-out part, the calibrators of the other parts (fitted on
        data unseen there), averaged as ``predict_proba`` averages them, are
        scored against the raw scores (and the prior correction alone)."""
        n = len(pairs)
        if n < 2:
            return
        sums_cal, sums_prior, raw_proba = [0.0] * n, [0.0] * n, [None] * n
        try:
            for f, (_, fitted) in enumerate(pairs):
                method = _response_method(self.estimator, fitted)
                kind = LOGITS if needs_logits(fitted) else PROBABILITIES
                others = [g for g in range(n) if g != f]
                scores = [
                    _to_calibrator_input(folds[g][1][method], method, fitted)
                    for g in others
                ]
                for g, part in zip(others, scores, strict=True):
                    if raw_proba[g] is None:
                        raw_proba[g] = as_probabilities(part, kind)
                # one call per calibrator on all the parts it did not see
                # (a call per part costs its input checks n - 1 times)
                cut = np.cumsum([len(part) for part in scores])[:-1]
                for g, p in zip(
                    others,
                    np.split(fitted.predict_proba(np.concatenate(scores)), cut),
                    strict=True,
                ):
                    sums_cal[g] = sums_cal[g] + p
                if isinstance(fitted, PriorThen):
                    raw_others = np.concatenate([raw_proba[g] for g in others])
                    corrected = fitted.prior.predict_proba(raw_others)
                    for g, p in zip(others, np.split(corrected, cut), strict=True):
                        sums_prior[g] = sums_prior[g] + p
            cal, raw, prior = [], [], []
            for g, (_, test) in enumerate(splits):
                y_idx = np.searchsorted(self.classes_, y[test])
                w_g = _take(w, test)

                def log_loss(proba, y_idx=y_idx, w_g=w_g):
                    return float(np.average(_row_log_loss(y_idx, proba), weights=w_g))

                raw.append(log_loss(raw_proba[g]))
                cal.append(log_loss(sums_cal[g] / (n - 1)))
                if self.prior is not None:
                    prior.append(log_loss(sums_prior[g] / (n - 1)))
        except Exception:  # the check must never break a fit that succeeds
            return
        if prior:
            _warn_harm("PriorCorrection", prior, raw, _PRIOR_ADVICE, jackknife=True)
        _warn_harm(type(spec).__name__, cal, raw, _CALIBRATOR_ADVICE, jackknife=True)

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

    # -- segment-aware calibration (segments=) ------------------------------

    def _segment_calibrator(self):
        """The segment-aware calibrator to clone, checked."""
        from ._segment import SegmentCalibrator

        if self.prior is not None:
            raise ValueError(
                "prior is not supported with segments; apply the PriorCorrection "
                "to the scores first, or leave segments=None."
            )
        if self.calibrator is None:
            return SegmentCalibrator()
        if isinstance(self.calibrator, str) and self.calibrator == AUTO:
            return SegmentCalibrator(global_calibrator=AUTO)
        takes = getattr(self.calibrator, "fit", None)
        if takes is None or "segments" not in inspect.signature(takes).parameters:
            raise ValueError(
                "segments needs a segment-aware calibrator: calibrator=None, "
                f'"auto" or a SegmentCalibrator; got {self.calibrator!r}.'
            )
        return self.calibrator

    def _segments_of(self, X):
        """The ``segments`` columns of ``X``."""
        columns = self.segments
        if isinstance(columns, str | int | np.integer):
            columns = [columns]
        columns = list(columns)
        if not columns or not (
            all(isinstance(c, str) for c in columns)
            or all(
                isinstance(c, int | np.integer) and not isinstance(c, bool)
                for c in columns
            )
        ):
            raise ValueError(
                "segments must be a non-empty list of column names (of a "
                f"DataFrame X) or of column indices; got {self.segments!r}."
            )
        if hasattr(X, "columns") and hasattr(X, "iloc"):
            if isinstance(columns[0], str):
                missing = [c for c in columns if c not in X.columns]
                if missing:
                    raise ValueError(f"segments: X has no column(s) {missing}.")
                return X[columns]
            return X.iloc[:, columns]
        if isinstance(columns[0], str):
            raise ValueError(
                "segments names columns, but X has no column names; give "
                "column indices or a DataFrame."
            )
        X = np.asarray(X)
        if X.ndim != 2 or max(columns) >= X.shape[1] or min(columns) < -X.shape[1]:
            raise ValueError(
                f"segments: column index out of range for X of shape {X.shape}."
            )
        return X[:, columns]

    def _segment_scores(self, estimator, X):
        """The estimator's logits on ``X`` as the segment calibrator takes
        them."""
        method = _logit_method(estimator)
        (response,) = _responses(estimator, X, [method], self.classes_).values()
        return _to_calibrator_input(response, method, LOGITS_TAKER)

    def _fit_segmented(self, X, y, w, sample_weight, fit_params):
        """Cross-fitting (or a frozen estimator's calibration) with a
        segment-aware calibrator fitted on each calibration part's scores
        and segment columns."""
        calibrator = self._segment_calibrator()
        segments = self._segments_of(X)
        frozen = isinstance(self.estimator, FrozenEstimator)
        ensemble = (not frozen) if self.ensemble == "auto" else self.ensemble
        est_params, split_params = self._routed_params(
            sample_weight, w, fit_params, frozen
        )

        def calibrate(scores, rows):
            return clone(calibrator).fit(
                scores,
                y[rows],
                segments=_safe_indexing(segments, rows),
                sample_weight=_take(w, rows),
            )

        if frozen and not ensemble:
            estimator = clone(self.estimator)
            rows = np.arange(len(y))
            pairs = [(estimator, calibrate(self._segment_scores(estimator, X), rows))]
        else:
            method = _logit_method(self.estimator)
            splits = list(self._check_cv(y).split(X, y, **split_params))
            folds = self._fit_folds(X, y, splits, est_params, [method])

            def scores_of(responses):
                return _to_calibrator_input(responses[method], method, LOGITS_TAKER)

            if ensemble:
                pairs = [
                    (estimator, calibrate(scores_of(responses), test))
                    for (estimator, responses), (_, test) in zip(
                        folds, splits, strict=True
                    )
                ]
            else:
                pooled, order = self._pooled(folds, splits, len(y), partition=True)
                estimator = self._fit_all(X, y, est_params, frozen)
                pairs = [(estimator, calibrate(scores_of(pooled), order))]
        return self._keep(pairs)

    @fill_doc
    def predict_proba(self, X):
        """Calibrated probabilities, averaged over the calibrated pairs.

        %(estimator_samples_parameter)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``. With ``calibrator="auto"``, floored
            at the machine epsilon (renormalised): none is exactly 0 or 1.
        """
        check_is_fitted(self)
        first_estimator, first_calibrator = self.calibrated_classifiers_[0]
        if self.segments is not None:
            segments = self._segments_of(X)
            proba = 0.0
            for estimator, calibrator in self.calibrated_classifiers_:
                proba = proba + calibrator.predict_proba(
                    self._segment_scores(estimator, X), segments=segments
                )
            return proba / len(self.calibrated_classifiers_)
        if first_calibrator is None:  # no calibration
            proba = first_estimator.predict_proba(X)
            proba = _map_to_classes(
                proba,
                "predict_proba",
                getattr(first_estimator, "classes_", None),
                self.classes_,
            )
        else:
            proba = 0.0
            for estimator, calibrator in self.calibrated_classifiers_:
                method = _response_method(estimator, calibrator)
                (response,) = _responses(estimator, X, [method], self.classes_).values()
                scores = _to_calibrator_input(response, method, calibrator)
                proba = proba + calibrator.predict_proba(scores)
            proba = proba / len(self.calibrated_classifiers_)
        if "selection_" in self.__dict__:  # "auto": as the selection scored it
            proba = floor_probabilities(proba)
        return proba

    @fill_doc
    def predict(self, X):
        """Predict the class with the largest calibrated probability.

        %(estimator_samples_parameter)s

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


_EPS = np.finfo(np.float64).eps

#: the calibrators whose fold refits the harm check may skip: maps fitted by
#: (regularised) maximum likelihood with the registry's parameter count
_SMOOTH_PARAMETRIC = frozenset(
    {"temperature", "platt", "quadratic", "beta", "vector", "svs", "sms"}
    | {"dirichlet", "matrix", "ets"}
)


def _may_skip_refits(calibrator, cv):
    """Whether :func:`_refits_cannot_warn` may judge ``calibrator``: a map
    fitted by (regularised) maximum likelihood with the registry's parameter
    count (not the binning, spline and non-parametric ones, whose flexibility
    their parameters set), and an integer ``cv`` (its fold sizes known)."""
    spec = spec_of(calibrator)
    return (
        spec is not None
        and spec.name in _SMOOTH_PARAMETRIC
        and isinstance(cv, int | np.integer)
        and cv >= 2
    )


def _in_sample_log_losses(calibrator, fitted, inputs, y_idx, w):
    """``(raw, calibrated)`` weighted mean log-loss on the fit's own rows,
    the true class's probability floored at the machine epsilon (the check's
    rows are renormalised after flooring: a relative difference of at most
    n_classes * eps, nothing to a 1 % margin); None where they cannot be
    had (the refits will say what is wrong, or nothing)."""
    scores = inputs.take(calibrator)
    try:
        if isinstance(fitted, BaseCalibrator):  # its fit validated these scores
            proba = fitted._predict_proba(as_2d(scores))
        else:
            proba = np.asarray(fitted.predict_proba(scores), dtype=np.float64)
    except Exception:
        return None
    if proba.shape != inputs.passthrough.shape:
        return None
    rows = np.arange(len(y_idx))
    raw = -np.log(np.maximum(inputs.passthrough[rows, y_idx], _EPS))
    cal = -np.log(np.maximum(proba[rows, y_idx], _EPS))
    if not np.all(np.isfinite(cal)):
        return None
    return np.average(raw, weights=w), np.average(cal, weights=w)


def _refits_cannot_warn(losses, n_parameters, n_rows, w, cv):
    """Whether the harm check's fold refits of a calibrator with
    ``n_parameters`` fitted parameters cannot warn, judged from ``losses``,
    the ``(raw, calibrated)`` mean log-loss on the ``n_rows`` rows (weights
    ``w``) of the fit on all of them (None: they could not be had).

    The check warns when the cross-validated log-loss exceeds the raw one by
    more than 1 % of the raw log-loss (and the fold noise). The
    cross-validated log-loss is the in-sample one plus the optimism of the
    fits: by Akaike's argument about ``p / n_train + p / n`` nats a row for
    ``p`` fitted parameters (fold fits on ``n_train`` rows scored on unseen
    rows, against the fit on all ``n`` rows scored on its own rows). When the
    in-sample difference plus twice that optimism stays within the 1 %
    margin, the refits cannot change the verdict. The effective number of
    rows is Kish's for weighted rows. Temperature scaling's solver gives
    both log-losses from its own passes: not floored, they differ from the
    floored ones only on rows whose true class has a probability below the
    machine epsilon (36 nats), where the floor caps the loss."""
    if losses is None or not np.all(np.isfinite(losses)):
        return False
    if w is None:
        n = n_rows
    else:
        w = np.asarray(w, dtype=np.float64)
        if not w.sum() > 0:
            return False
        n = w.sum() ** 2 / np.sum(w**2)
    raw, cal = losses
    optimism = n_parameters / (n * (cv - 1) / cv) + n_parameters / n
    return bool(cal - raw + 2 * optimism <= 0.01 * raw)


def _take(w, rows):
    return None if w is None else w[rows]


def _is_auto(spec):
    return isinstance(spec, str) and spec == AUTO


def _is_splits(cv):
    """Whether ``cv`` is an iterable of (train, test) splits, not a splitter."""
    return not hasattr(cv, "split") and hasattr(cv, "__iter__")


def _pooled_splits(splits, order):
    """The outer splits' held-out parts as folds of the pooled rows (which
    follow ``order``, the concatenated held-out parts): fold f holds the
    positions of part f, its training rows all the others."""
    sizes = [len(test) for _, test in splits]
    edges = np.cumsum([0, *sizes])
    positions = np.arange(len(order))
    return [
        (
            np.r_[positions[: edges[f]], positions[edges[f + 1] :]],
            positions[edges[f] : edges[f + 1]],
        )
        for f in range(len(splits))
    ]


def _n_folds(cv):
    if isinstance(cv, int | np.integer) and not isinstance(cv, bool):
        return int(cv)
    return getattr(cv, "n_splits", None)
