"""SegmentCalibrator: a calibration map of the score *and* of segment columns
(multicalibration), for models miscalibrated differently in different
segments, which no global calibrator can repair."""

import math
import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import (
    check_is_fitted,
)

from sklcalib._utils._docstrings import fill_doc
from sklcalib._utils._scores import log_floored, softmax
from sklcalib._utils._validation import (
    check_option,
    check_prob_values,
    check_scalar,
)

from . import _select
from ._base import LOGITS, PROBABILITIES
from ._composed import fit_on_classes
from ._registry import AUTO, PASSTHROUGH, canonical_name
from ._score_inputs import validate_fit_inputs, validate_scores
from ._segment_boosting import (
    BoostSettings,
    LightGBMData,
    boost_lightgbm,
    fit_rescaling,
    fit_tree_boost,
    resolve_backend,
)
from ._segment_encoding import SegmentEncoder
from ._segment_logistic import (
    DEFAULT_ALPHAS,
    alo_logits,
    alo_losses,
    choose_alpha,
    fit_logistic,
    row_losses,
)
from ._select import (
    CalibratorSearchCV,
    _check_cv_param,
    _events,
    _fold_scores,
    _Inputs,
    _make_candidate,
    _paired_gain,
    _row_log_loss,
    _splits,
    default_candidates,
    floor_probabilities,
    parameters_per_class,
)

METHODS = ("auto", "logistic", "boosting", "blend")
#: rows below which auto chooses the logistic map's ridge strength in each
#: of its folds (see ``_fit_auto``)
NESTED_ROWS = 2000
#: rows from which auto fits the boosting on its first fold only, and the
#: blend replaces the logistic map by their paired losses on that fold
LARGE_ROWS = 40_000
LOGISTIC, BOOSTING, BLEND, GLOBAL = "logistic", "boosting", "blend", "global"
#: standard errors (of the paired fold differences) by which the logistic
#: map's fold log-loss must beat the simpler candidates' for auto to take the
#: blend from its first fold alone (see ``_fit_auto``)
CLEAR_SE = 3.0
#: boosting folds from which auto leaves the boosting and the blend out when
#: they tie the simpler maps (see ``_ties``)
TIE_FOLDS = 2


def _margin_logits(scores, response):
    """(n, K) logits of validated scores, K = 1 (the positive-class margin)
    for two classes."""
    if response == PROBABILITIES:
        if scores.ndim == 1:
            return (log_floored(scores) - log_floored(1.0 - scores))[:, None]
        logp = log_floored(scores)
        if scores.shape[1] == 2:
            return (logp[:, 1] - logp[:, 0])[:, None]
        return logp - logp.mean(axis=1, keepdims=True)
    if scores.ndim == 1:
        return scores[:, None]
    if scores.shape[1] == 2:
        return (scores[:, 1] - scores[:, 0])[:, None]
    return scores - scores.mean(axis=1, keepdims=True)


def _proba_of(eta):
    """(n, K) probabilities of corrected logits (a margin column for two:
    the sigmoid of each side, the softmax of ``[0, e]`` without the row
    maxima and sums)."""
    if eta.shape[1] == 1:
        return np.column_stack([expit(-eta[:, 0]), expit(eta[:, 0])])
    return softmax(eta)


def _blend_proba(p, q):
    """The blend of two maps' probabilities: the softmax of the mean of their
    logits (the normalised geometric mean of the probabilities)."""
    return softmax(0.5 * (log_floored(p) + log_floored(q)))


class SegmentCalibrator(ClassifierMixin, BaseEstimator):
    """Calibrate scores in every segment, by a map of the score and segments.

    Multicalibration: the map depends on the score and on segment columns.
    A global calibrator (temperature, Platt, isotonic...) moves every row by
    the same map of its score, so it cannot repair a model that is
    over-confident in one segment (a region, an age band, a device) and
    under-confident in another. This calibrator learns a correction of the
    model's logit that depends on the score and on the segment columns
    (given to ``fit`` and ``predict_proba`` beside the scores):

    - ``method="logistic"``: the corrected logit of class k is
      ``a z_k + b_k + sum_s 1[s] (c_sk + d_sk z_k)`` over the levels ``s``
      of the segment columns (one indicator per level of a categorical
      column, per quantile bin of a numeric one; for two classes also per
      cell of the pairs of small columns, ``max_pair_cells``): a
      segment-specific intercept and slope, under a ridge penalty on ``c``
      and ``d`` whose strength is chosen by inner cross-validation
      (``alphas``, ``inner_cv``). A large penalty gives back global Platt /
      temperature scaling, so the penalty shrinks towards global
      calibration. Binary (sigmoid) and multiclass (softmax, full-vector
      correction).
    - ``method="boosting"``: gradient-boosted trees on [segment indicators,
      numeric segment values, logits] that *start from the model's own
      logit* (the correction is learnt, not the probability): Newton steps of
      the log-loss with shallow trees, early-stopped on the log-loss of a
      held-out ``validation_fraction`` of the rows, then a final rescaling
      ``a eta + b`` of the corrected logit (``eta / T`` for more than two
      classes). LightGBM (its ``init_score``) when installed and
      ``backend="auto"``; scikit-learn's ``DecisionTreeRegressor``
      otherwise.
    - ``method="blend"``: both maps above, fitted on the same rows, and the
      mean of their corrected logits (the normalised geometric mean of
      their probabilities): the logistic map's slopes and the trees'
      interactions. Its log-loss is at most the mean of the two maps' on
      every row (the log-sum-exp is convex).
    - ``method="auto"`` (default): "passthrough" (no calibration), the global
      calibrator ``global_calibrator`` and the segment maps are scored by
      ``cv``-fold cross-validated log-loss. One segment map takes part in the
      choice: the blend when it was scored and the logistic map beats the
      simpler candidates, else the better of the two others. Then the simplest
      within one standard error of the best is kept (the rule of
      :class:`CalibratorSearchCV`; "passthrough" has no parameter, the global
      calibrator one or two, the segment map counts last): a segment map is
      chosen only when it beats the global and uncalibrated scores by more
      than the fold-to-fold noise, so segments that carry no information leave
      the scores to the global calibrator or alone. Two classes: the logistic
      map and Platt scaling are scored by their approximate leave-one-out
      losses (one fit each, averaged over each fold's rows). Boosting is
      fitted fold by fold, and it and the blend (scored from the two maps'
      held-out probabilities, without a fit of its own) are left out
      ("screened out" in ``cv_results_``), their other folds not fitted, when
      neither is better than a simpler candidate on the folds fitted so far,
      when the boosting's first fold stops at round 0 (its map there is the
      rescaled logit), or, from the second fold, when the better of them beats
      the best simpler candidate by no more than one standard error of the
      per-row paired differences on those folds' rows (a tie: the blend then
      replaces a chosen logistic map if it is lower on those rows). When the
      logistic map beats the simpler candidates by more than three standard
      errors of the paired fold differences (a clear case), a segment map is
      chosen whatever the other folds say, and past the first fold's screen
      that map is the blend: its other folds are not fitted.

    Parameters
    ----------
    method : {"auto", "logistic", "boosting", "blend"}, default="auto"
        The correction, see above.
    response : {"auto", "logits", "probabilities"}, default="auto"
        How to read the scores; "auto": probabilities when every value lies
        in [0, 1] and rows sum to 1 (pass it for 1-D margins within [0, 1]).
    global_calibrator : str or calibrator, default=None
        The global candidate of ``method="auto"``: a name of
        :data:`~sklcalib.calibration.CALIBRATORS` or an instance. None:
        ``"platt"`` for two classes, ``"temperature"`` for more. ``"auto"``:
        the registry's candidate that :class:`CalibratorSearchCV` chooses on
        the same rows and folds ("passthrough" left out; slower: every global
        calibrator is cross-validated first).
    cv : int or cross-validation generator, default=5
        Folds of ``method="auto"`` (an integer: shuffled k-fold, as in
        :class:`CalibratorSearchCV`).
    rule : {"one_se", "best"}, default="one_se"
        The choice of ``method="auto"``, see :class:`CalibratorSearchCV`.
    alphas : sequence of float, default=None
        Ridge strengths tried by the logistic map (penalty per unit of mean
        log-loss), largest first. None: ``(1e-1, 1e-2, 1e-3, 1e-4, 1e-5)``.
    inner_cv : int, default=3
        Folds choosing the ridge strength (with ``method="auto"``, chosen
        once on all the rows and kept in the outer folds). Beyond 20,000
        rows it is chosen on a random 20,000 and carried to all rows at the
        same prior strength (``alpha * n_rows`` kept).
    max_iter : int, default=200
        Most boosting rounds.
    learning_rate : float, default=0.1
        Shrinkage of each boosting step.
    max_depth : int, default=3
        Depth of the boosted trees.
    min_samples_leaf : int, default=50
        Fewest rows in a leaf of a boosted tree.
    validation_fraction : float, default=0.2
        Rows held out for the early stopping of the boosting.
    n_iter_no_change : int, default=10
        Rounds without improvement of the held-out log-loss before stopping.
    backend : {"auto", "sklearn", "lightgbm"}, default="auto"
        The boosting's trees: LightGBM when installed ("auto"), else
        scikit-learn's.
    max_levels : int, default=50
        Most indicators per categorical segment column (its most frequent
        levels); a numeric column with more distinct values is binned. 50
        keeps every US state (with 20, 31 states of the segment suite's tv16
        table fell to the column's baseline, and the test log-loss was
        0.0004-0.0010 higher).
    n_bins : int, default=5
        Quantile bins of a numeric segment column.
    min_frequency : int, default=20
        Rows a level needs at fit for an indicator of its own; rarer levels,
        levels unseen at fit and missing values (unless frequent at fit) get
        the column's baseline (no indicator).
    max_pair_cells : int, default=32
        Pairs of segment columns get one indicator per cell (a level of each)
        seen in at least ``min_frequency`` rows, in the logistic map of two
        classes: a correction that depends on two columns at once (seat belt
        and airbag), which a sum of per-column terms cannot express. The
        pairs of fewest cells (the product of their indicator counts) come
        first, while their cells in all stay within this budget; 0: no
        pairs. 32 keeps the pairs of small columns (the six of four yes/no
        columns, two sexes by four regions) and leaves out those of a column
        with many levels (51 states), whose cells are mostly rare; the
        map's Newton steps grow with the square of its indicators (64 made
        the fit twice as slow on a six-column survey, with no gain on the
        segment suite). More than two classes: no pairs (a cell costs two
        parameters per class).
    min_events_per_parameter : float, default=10
        The size rule of ``method="auto"`` (see :class:`CalibratorSearchCV`);
        the segment maps count as 2 parameters per class (their penalty and
        their early stopping control the rest).
    n_jobs : int, default=1
        Threads of LightGBM.
    random_state : int or None, default=0
        Seeds the folds, the held-out rows of the boosting and its trees.

    Attributes
    ----------
    method_ : str
        The map fitted: "passthrough", "global", "logistic", "boosting" or
        "blend".
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    response_ : str
        How the scores were read.
    alpha_ : float or None
        The ridge strength chosen (logistic map).
    n_iter_ : int or None
        Boosting rounds kept.
    backend_ : str or None
        The boosting's trees, "sklearn" or "lightgbm".
    cv_results_ : dict of list or None
        ``method="auto"``: one entry per candidate, as in
        :class:`CalibratorSearchCV` (``candidate``, ``status``,
        ``mean_log_loss``, ``delta_log_loss`` against "passthrough", ...).
    reason_ : str or None
        ``method="auto"``: why ``method_`` was chosen.
    global_estimator_ : calibrator or None
        The fitted global calibrator when ``method_ == "global"``.
    global_search_ : CalibratorSearchCV or None
        The choice of the global candidate (``global_calibrator="auto"``).
    feature_names_ : list of str
        The logistic map's segment indicators, ``"column=level"``, then the
        pairs' cells, ``"column=level&column=level"``.
    n_features_in_ : int
        Score columns.

    See Also
    --------
    sklcalib.metrics.multicalibration_audit : Finds the segments where a
        model is miscalibrated; this calibrator repairs them.
    CalibratorSearchCV : The selection rule of ``method="auto"``.

    Notes
    -----
    ``segments=None`` fits without segment columns (the logistic map is then
    Platt / temperature-with-intercepts scaling).

    Examples
    --------
    >>> import numpy as np
    >>> from sklcalib.calibration import SegmentCalibrator
    >>> rng = np.random.default_rng(0)
    >>> n = 4000
    >>> region = rng.choice(["north", "south"], size=n)
    >>> logit = rng.normal(0, 2, size=n)
    >>> # over-confident in the north, under-confident in the south
    >>> true_logit = np.where(region == "north", 0.5 * logit, 1.5 * logit)
    >>> y = (rng.uniform(size=n) < 1 / (1 + np.exp(-true_logit))).astype(int)
    >>> cal = SegmentCalibrator(method="logistic").fit(logit, y, segments=region)
    >>> proba = cal.predict_proba(np.array([2.0, 2.0]), segments=["north", "south"])
    >>> np.round(proba[:, 1], 2)  # the truth: sigmoid(1) = 0.73, sigmoid(3) = 0.95
    array([0.73, 0.96])
    >>> SegmentCalibrator().fit(logit, y, segments=region).method_  # auto
    'blend'
    """

    def __init__(
        self,
        method="auto",
        *,
        response="auto",
        global_calibrator=None,
        cv=5,
        rule="one_se",
        alphas=None,
        inner_cv=3,
        max_iter=200,
        learning_rate=0.1,
        max_depth=3,
        min_samples_leaf=50,
        validation_fraction=0.2,
        n_iter_no_change=10,
        backend="auto",
        max_levels=50,
        n_bins=5,
        min_frequency=20,
        max_pair_cells=32,
        min_events_per_parameter=10,
        n_jobs=1,
        random_state=0,
    ):
        self.method = method
        self.response = response
        self.global_calibrator = global_calibrator
        self.cv = cv
        self.rule = rule
        self.alphas = alphas
        self.inner_cv = inner_cv
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.backend = backend
        self.max_levels = max_levels
        self.n_bins = n_bins
        self.min_frequency = min_frequency
        self.max_pair_cells = max_pair_cells
        self.min_events_per_parameter = min_events_per_parameter
        self.n_jobs = n_jobs
        self.random_state = random_state

    # -- parameters and inputs ------------------------------------------------

    def _check_params(self):
        check_option(self.method, "method", METHODS)
        check_option(self.response, "response", ("auto", LOGITS, PROBABILITIES))
        check_option(self.rule, "rule", ("one_se", "best"))
        check_option(self.backend, "backend", ("auto", "sklearn", "lightgbm"))
        _check_cv_param(self.cv)
        check_scalar(self.inner_cv, "inner_cv", integer=True, low=2)
        check_scalar(self.max_iter, "max_iter", integer=True, low=1)
        check_scalar(self.learning_rate, "learning_rate", low=0, low_open=True)
        check_scalar(self.max_depth, "max_depth", integer=True, low=1)
        check_scalar(self.min_samples_leaf, "min_samples_leaf", integer=True, low=1)
        check_scalar(self.validation_fraction, "validation_fraction", low=0, high=0.5)
        check_scalar(self.n_iter_no_change, "n_iter_no_change", integer=True, low=1)
        check_scalar(self.max_levels, "max_levels", integer=True, low=1)
        check_scalar(self.n_bins, "n_bins", integer=True, low=2)
        check_scalar(self.min_frequency, "min_frequency", integer=True, low=1)
        check_scalar(self.max_pair_cells, "max_pair_cells", integer=True, low=0)
        check_scalar(self.min_events_per_parameter, "min_events_per_parameter", low=0)
        check_scalar(self.n_jobs, "n_jobs", integer=True, low=1)
        alphas = DEFAULT_ALPHAS if self.alphas is None else self.alphas
        if isinstance(alphas, str) or not hasattr(alphas, "__iter__") or not alphas:
            raise ValueError(
                f"alphas must be a non-empty sequence of positive numbers; got "
                f"{self.alphas!r}."
            )
        alphas = [check_scalar(a, "alphas", low=0, low_open=True) for a in alphas]
        if isinstance(self.global_calibrator, str) and self.global_calibrator != AUTO:
            canonical_name(self.global_calibrator, "global_calibrator")
        return tuple(sorted(alphas, reverse=True))

    def _validate_scores(self, scores, *, reset):
        return validate_scores(self, scores, reset=reset, fitted="calibrator")

    def _segment_features(self, segments, n_rows, *, reset):
        """(indicators, boosting features without the logits)."""
        if segments is None:
            if not reset and self.encoder_ is not None:
                raise ValueError(
                    "segments is None, but the calibrator was fitted with segment "
                    "columns; pass the same columns to predict_proba."
                )
            if reset:
                self.encoder_ = None
                self.feature_names_ = []
            return np.zeros((n_rows, 0)), np.zeros((n_rows, 0))
        if not reset and self.encoder_ is None:
            raise ValueError(
                "the calibrator was fitted without segments (segments=None); "
                "pass segments=None to predict_proba."
            )
        if reset:
            # pairs for two classes only: with K classes a cell costs 2 K
            # parameters, and on the suite's 3-class cps3 table the pairs
            # raised the test log-loss on 5 of 6 fits (up to +0.0007)
            pairs = self.max_pair_cells if len(self.classes_) == 2 else 0
            self.encoder_ = SegmentEncoder(
                self.max_levels, self.n_bins, self.min_frequency, pairs
            )
            X, _ = self.encoder_.fit_transform(segments, n_rows)
            self.feature_names_ = list(self.encoder_.feature_names_)
        else:
            X, _ = self.encoder_.transform(segments, n_rows, raw=True)
        n_ind, n_main = len(self.feature_names_), self.encoder_.n_main_
        # the logistic map: levels and pairs' cells; the trees: levels and
        # raw numeric values (they find the pairs themselves; without raw
        # values, a view of the levels: the trees' features are stacked
        # with the logits anyway)
        if n_ind == X.shape[1]:
            return X[:, :n_ind], X[:, :n_main]
        return X[:, :n_ind], np.hstack([X[:, :n_main], X[:, n_ind:]])

    # -- fit ------------------------------------------------------------------

    def fit(self, scores, y, *, segments=None, sample_weight=None):
        """Fit the segment-aware map on held-out scores.

        Parameters
        ----------
        scores : array-like of shape (n_samples, n_classes) or (n_samples,)
            Held-out scores of a classifier: logits or probabilities (see
            ``response``); 1-D for the positive class of a binary problem.
            float32 scores are accepted.
        y : array-like of shape (n_samples,)
            Targets; at least two classes, one score column per class.
        segments : DataFrame or array-like of shape (n_samples, n_columns)
            The segment columns (categorical and/or numeric; a 1-D array is
            one column), e.g. region, age, device. None: no segment column.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights.

        Returns
        -------
        self : object
            The fitted calibrator.
        """
        alphas = self._check_params()
        scores, y, w = validate_fit_inputs(
            self, scores, y, sample_weight, fitted="calibrator", warn=True
        )
        n = y.shape[0]
        w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
        _, y_idx = np.unique(y, return_inverse=True)
        S, X = self._segment_features(segments, n, reset=True)
        z = _margin_logits(scores, self.response_)
        self.alpha_ = self.n_iter_ = self.backend_ = None
        self.cv_results_ = self.reason_ = None
        self.global_estimator_ = self.global_search_ = None
        self._alphas = alphas
        self._global = self._global_candidate()
        if self.method == "auto":
            self._fit_auto(scores, z, S, X, y, y_idx, w)
        else:
            self._fit_method(self.method, scores, z, S, X, y, y_idx, w)
        return self

    def _global_candidate(self):
        name = self.global_calibrator
        if name is None or (name == AUTO and self.method != AUTO):
            return "platt" if len(self.classes_) == 2 else "temperature"
        if name == AUTO:  # chosen in _fit_auto
            return AUTO
        return (
            canonical_name(name, "global_calibrator") if isinstance(name, str) else name
        )

    def _fit_method(self, method, scores, z, S, X, y, y_idx, w):
        """Fit one map on all the given rows (sets ``method_`` and the map)."""
        self.method_ = method
        if method == PASSTHROUGH:
            return
        if method == GLOBAL:
            inputs = _Inputs.from_scores(scores, self.response_)
            calibrator = _make_candidate(self._global)
            self.global_estimator_ = fit_on_classes(
                calibrator, inputs.take(calibrator), y, self.classes_, w
            )
            return
        if method == BLEND:
            logistic = getattr(self, "_alo_map", None)
            if logistic is None:
                self._fit_method(LOGISTIC, scores, z, S, X, y, y_idx, w)
                logistic = self.map_
            else:  # auto's leave-one-out fit on these rows
                self.alpha_ = float(self._alphas[0])
            self._fit_method(BOOSTING, scores, z, S, X, y, y_idx, w)
            self.method_, self.logistic_map_ = BLEND, logistic
            return
        wn = w / w.sum()
        if method == LOGISTIC:
            fitted = warm = None
            if S.shape[1] == 0 or len(self._alphas) == 1:
                alpha = self._alphas[0]
            else:
                alpha, _, fit = choose_alpha(
                    z,
                    S,
                    y_idx,
                    w,
                    self._alphas,
                    self.inner_cv,
                    self.random_state,
                    return_fit=True,
                )
                fitted, warm = (None, None) if fit is None else fit
            self.alpha_ = float(alpha)
            if fitted is None:  # else the strength's fit on these rows is kept
                fitted, _ = fit_logistic(z, S, y_idx, wn, alpha, theta0=warm)
            self.map_ = fitted
            return
        backend = resolve_backend(self.backend)
        features = np.hstack([X, z])
        settings = self._boost_settings()
        if backend == "lightgbm":
            data = getattr(self, "_lgb_data", None) or LightGBMData(
                features, z, y_idx, w, self.n_jobs
            )
            booster, rounds, eta, _ = boost_lightgbm(
                data, np.arange(len(y_idx)), None, settings, self.n_jobs
            )
        else:
            booster, rounds = fit_tree_boost(features, z, y_idx, w, settings)
            eta = z + booster.correction(features, z.shape[1])
        self.backend_, self.map_, self.n_iter_ = backend, booster, rounds
        self.rescale_ = fit_rescaling(eta, y_idx, wn, z.shape[1] == 1)

    def _boost_settings(self):
        return BoostSettings(
            self.max_iter,
            self.learning_rate,
            self.max_depth,
            self.min_samples_leaf,
            self.validation_fraction,
            self.n_iter_no_change,
            check_random_state(self.random_state).randint(2**31 - 1),
        )

    def _boosting_fold_proba(self, z, y_idx, w, train, test):
        """A fold of the LightGBM boosting: the corrected logits of the
        held-out fold come from LightGBM's running scores at the best round
        (no prediction pass), then the fold's rescaling, fitted on its
        training rows as the final map's is; and the best round."""
        _, rounds, eta_fit, eta_test = boost_lightgbm(
            self._lgb_data, train, test, self._boost_settings(), self.n_jobs
        )
        wt = w[train] / w[train].sum()
        a, b = fit_rescaling(eta_fit, y_idx[train], wt, z.shape[1] == 1)
        return _proba_of(a * eta_test + b), rounds

    def _fit_auto(self, scores, z, S, X, y, y_idx, w):
        K = len(self.classes_)
        splits = _splits(self.cv, y_idx, self.random_state, None)
        global_folds = None
        if self._global == AUTO:  # the selection's choice among the globals
            search = CalibratorSearchCV(
                default_candidates(K),
                # the same folds as the segment maps': the chosen global
                # calibrator's fold losses are then reused, not refitted
                cv=splits if len(splits) >= 2 else self.cv,
                response=self.response_,
                rule=self.rule,
                min_events_per_parameter=self.min_events_per_parameter,
                random_state=self.random_state,
            )
            search._fit_inputs(
                _Inputs.from_scores(scores, self.response_),
                y,
                w,
                metrics=(),
                refit=False,
            )
            self.global_search_ = search
            self._global = search.best_candidate_
            if len(splits) >= 2 and search.cv_results_ is not None:
                best = search.best_index_
                global_folds = [
                    search.cv_results_[f"split{f}_log_loss"][best]
                    for f in range(len(splits))
                ]
        glob = self._global
        n_glob = parameters_per_class(glob, K)
        candidates = [PASSTHROUGH, GLOBAL, LOGISTIC, BOOSTING, BLEND]
        names = [PASSTHROUGH, f"global ({_name(glob)})", LOGISTIC, BOOSTING, BLEND]
        n_params = [0.0, np.nan if n_glob is None else float(n_glob), 2.0]
        n_params += [np.inf, np.inf]
        n_cand = len(candidates)
        inputs = _Inputs.from_scores(scores, self.response_)
        events = _events(inputs, y_idx, K, w)
        status = ["evaluated"] * n_cand
        for i, m in enumerate(n_params):
            need = (
                0
                if not np.isfinite(m)
                else math.ceil(self.min_events_per_parameter * m)
            )
            if i >= 3:  # boosting and the blend: the segment maps' count
                need = math.ceil(self.min_events_per_parameter * 2.0)
            if events < need:
                status[i] = (
                    f"too few rows: {need} events needed, {events:g} given (the "
                    "smallest class, or the rows the raw scores misclassify)"
                )
        fold_ll = np.full((n_cand, len(splits)), np.nan)
        # every row's held-out log-loss per candidate (NaN where unknown):
        # the do-no-harm step of the rule against the raw scores
        row_ll = np.full((n_cand, len(y_idx)), np.nan)
        # held-out probabilities of the logistic and boosting maps (every row
        # in the fold that left it out): the blend's fold losses come from
        # them, without a fit of its own
        held = {}
        first = None  # a large set: the first fold's logistic and blend
        decided = None  # the blend, taken from its first fold (a clear case)
        tied = None  # the boosted folds' logistic and blend (a tie)
        # below NESTED_ROWS the ridge strength is chosen inside each fold (the
        # logistic map scored by its fold fits): chosen on all rows and then
        # scored by the same rows' leave-one-out losses, the strength's
        # choice flatters the map, and on a few hundred rows of segments
        # without signal that picked it over the raw scores
        nested = len(y_idx) < NESTED_ROWS
        if (
            status[2] == "evaluated"
            and S.shape[1]
            and len(self._alphas) > 1
            and not nested
        ):
            # the ridge strength chosen once, on all rows, and kept in the
            # folds and the refit: its inner cross-validation in every fold
            # would cost cv times more for a one-number choice
            alpha, _, alpha_fit = choose_alpha(
                z,
                S,
                y_idx,
                w,
                self._alphas,
                self.inner_cv,
                self.random_state,
                return_fit=True,
            )
            self._alphas = (alpha,)
        else:
            alpha_fit = None
        self._alo_map = self._lgb_data = None
        lgb = resolve_backend(self.backend) == "lightgbm"
        for i, method in enumerate(candidates):
            if status[i] != "evaluated":
                continue
            try:
                if method == BLEND:
                    if LOGISTIC not in held or BOOSTING not in held:
                        status[i] = (
                            "not evaluated: the logistic or the boosting map was not"
                        )
                        continue
                    blend = _blend_proba(held[LOGISTIC], held[BOOSTING])
                    row_ll[i] = _row_log_loss(y_idx, blend)
                    fold_ll[i] = [
                        _fold_scores(y_idx[test], blend[test], w[test], K, ())[
                            "log_loss"
                        ]
                        for _, test in splits
                    ]
                    continue
                if method == GLOBAL and global_folds is not None:
                    fold_ll[i] = global_folds
                    continue
                if method == GLOBAL and z.shape[1] == 1 and _is_platt(glob):
                    # Platt scaling is the logistic map without segments: its
                    # approximate leave-one-out losses too (two parameters,
                    # exact to O(1/n)), in place of one fit per fold
                    wn = w / w.sum()
                    none = S[:, :0]
                    platt, _, state = fit_logistic(
                        z, none, y_idx, wn, 1.0, return_state=True
                    )
                    rows = alo_losses(z, none, y_idx, wn, platt, state=state)
                    row_ll[i] = rows
                    fold_ll[i] = [
                        np.dot(w[test], rows[test]) / w[test].sum()
                        for _, test in splits
                    ]
                    continue
                if method == LOGISTIC and z.shape[1] == 1 and not nested:
                    # two classes: the map's approximate leave-one-out losses
                    # of one fit on all rows (the refit, when chosen), averaged
                    # over each fold's rows, in place of one fit per fold
                    e_loo = self._alo_rows(z, S, y_idx, w, alpha_fit)
                    held[LOGISTIC] = _proba_of(e_loo[:, None])
                    rows = row_losses(e_loo, y_idx)
                    row_ll[i] = rows
                    fold_ll[i] = [
                        np.dot(w[test], rows[test]) / w[test].sum()
                        for _, test in splits
                    ]
                    continue
                if method == BOOSTING and lgb and len(splits):
                    self._lgb_data = LightGBMData(
                        np.hstack([X, z]), z, y_idx, w, self.n_jobs
                    )
                for f, (train, test) in enumerate(splits):
                    if method == BOOSTING and lgb:
                        proba, rounds = self._boosting_fold_proba(
                            z, y_idx, w, train, test
                        )
                    else:
                        proba, rounds = self._fold_proba(
                            method, scores, z, S, X, y, y_idx, w, train, test
                        )
                    fold_ll[i, f] = _fold_scores(y_idx[test], proba, w[test], K, ())[
                        "log_loss"
                    ]
                    row_ll[i, test] = _row_log_loss(y_idx[test], proba)
                    if method in (LOGISTIC, BOOSTING):
                        if method not in held:
                            held[method] = np.full((len(y_idx), proba.shape[1]), 0.5)
                        held[method][test] = proba
                    if method == BOOSTING and f + 1 < len(splits):
                        # the screen after every fold but the last: boosting
                        # and the blend are chosen only when they beat every
                        # simpler map by more than the noise, so they are
                        # left out, and their other folds not fitted, when
                        # neither is better on the folds fitted so far, or,
                        # from TIE_FOLDS folds, when neither beats the best
                        # simpler map there by more than a standard error of
                        # the per-row paired differences (on the suite's
                        # sighted tables the blend tied the logistic map, all
                        # five folds were fitted, and it was kept or the raw
                        # scores were)
                        message, mine = _screen(
                            fold_ll, i, held, splits, y_idx, w, K, f + 1
                        )
                        if message is None and f == 0 and rounds == 0:
                            # no round beat the start on the first fold's
                            # stopping rows: the boosting's map there is the
                            # rescaled logit (the global map's), and the blend
                            # the logistic map shrunk towards it
                            message = (
                                "screened out: its first fold stopped at round "
                                "0 (the rescaled logit, a global map)"
                            )
                        if message is None and f + 1 >= TIE_FOLDS:
                            message, tied = _ties(
                                row_ll, i, held, splits, y_idx, w, f + 1
                            )
                        if message is not None:
                            status[i] = status[i + 1] = message
                            fold_ll[i] = np.nan
                            held.pop(BOOSTING, None)
                            break
                    if method == BOOSTING and f == 0 and len(splits) >= 2:
                        if (
                            len(y_idx) < LARGE_ROWS
                            and LOGISTIC in held
                            and _clears(fold_ll, 2, status, self.rule)
                        ):
                            # a clear case: the logistic map beats the raw
                            # scores and the global map by CLEAR_SE standard
                            # errors of the paired fold differences, so a
                            # segment map is chosen whatever the boosting's
                            # other folds say, and past the screen that map
                            # is the blend (evaluated on every fold, it is
                            # the one segment map that faces the simpler
                            # ones, below): its other folds were two thirds
                            # of auto's fit on the segment suite's tables
                            decided = (fold_ll[i, 0], mine[-1])
                            status[i] = status[i + 1] = (
                                "scored on the first fold only (a clear case): "
                                f"log-loss {fold_ll[i, 0]:.5f}, the blend's "
                                f"{mine[-1]:.5f}"
                            )
                            fold_ll[i] = np.nan
                            held.pop(BOOSTING, None)
                            break
                        if len(y_idx) >= LARGE_ROWS and LOGISTIC in held:
                            # a large set: the blend is judged against the
                            # logistic map on the first fold's rows alone
                            # (below), not by fitting the boosting on every
                            # fold (at 150,000 rows that was four fifths of
                            # auto's fit)
                            blend = _blend_proba(held[LOGISTIC][test], proba)
                            first = (test, held[LOGISTIC][test], blend)
                            status[i] = status[i + 1] = (
                                "scored on the first fold only (a large set): "
                                f"log-loss {fold_ll[i, 0]:.5f}, the blend's "
                                f"{mine[1]:.5f}"
                            )
                            fold_ll[i] = np.nan
                            held.pop(BOOSTING, None)
                            break
            except Exception as exc:  # a map that cannot fit these rows
                status[i] = f"failed: {type(exc).__name__}: {exc}"[:200]
                fold_ll[i] = np.nan
        evaluated = [
            i for i in range(n_cand) if status[i] == "evaluated" and len(splits) >= 2
        ]
        # one segment map faces the global calibrator and the raw scores
        # under the rule (it is kept only when it beats them by more than the
        # fold-to-fold noise): the blend when it was evaluated, else the map
        # of lowest mean fold log-loss. The blend's log-loss is at most the
        # mean of its two maps' on every row (the log-sum-exp is convex), and
        # the fold losses favour the logistic map (its leave-one-out fits
        # see all rows but one, the boosting's folds four fifths of them):
        # on the segment suite, picking the lowest held-out loss among the
        # three lost up to 0.0013 of test log-loss to the blend. But a blend
        # takes half of a logistic map that no simpler map is worse than
        # (cps, sighted, seed 1: the blend 0.0004 above the best global
        # calibrator on the test rows, the boosting alone 0.0001), so then
        # the better of the other two
        maps = [i for i in evaluated if candidates[i] in (LOGISTIC, BOOSTING, BLEND)]
        if len(maps) > 1:
            mean_ll = fold_ll.mean(axis=1)
            simpler = [mean_ll[i] for i in evaluated if i < 2]
            if 4 in maps and (not simpler or mean_ll[2] < min(simpler)):
                keep = 4
            else:
                keep = min((i for i in maps if i != 4), key=lambda i: mean_ll[i])
            evaluated = [i for i in evaluated if i not in maps or i == keep]
        n_params_rule = [0.0 if i == 0 else n_params[i] for i in range(n_cand)]
        n_params_rule[3] = n_params_rule[4] = np.nan  # unknown: last in the rule
        search = CalibratorSearchCV(rule=self.rule)
        chosen, within, reason = search._choose(
            candidates, evaluated, fold_ll, n_params_rule, status
        )
        if self.rule == "one_se" and chosen != 0 and 0 in evaluated:
            # do no harm, as CalibratorSearchCV: the chosen map must also beat
            # the raw scores by more than one standard error of the per-row
            # paired differences of the held-out log-losses (a gain that a
            # few rows carry is noise); skipped where a map's held-out rows
            # are not all known (a global calibrator chosen by its own search)
            rows = row_ll[chosen]
            if np.all(np.isfinite(rows)) and np.all(np.isfinite(row_ll[0])):
                gain, se = _paired_gain(row_ll[0], rows, w)
                if not gain > se:
                    reason = (
                        f"{names[chosen]}, {reason}, beats the raw scores by "
                        f"{gain:.4f} nats a held-out row, not more than one "
                        "standard error of the per-row paired differences "
                        f"({se:.4f}): the raw scores are kept"
                    )
                    chosen = 0
        if candidates[chosen] == LOGISTIC and decided is not None:
            chosen = candidates.index(BLEND)
            reason = (
                f"{reason}; a clear case: the logistic map beats the simpler "
                f"candidates by more than {CLEAR_SE:g} standard errors, and on "
                f"the first fold the boosting ({decided[0]:.5f}) or the blend "
                f"({decided[1]:.5f}) beats every simpler map: the blend "
                "replaces the logistic map"
            )
        if candidates[chosen] == LOGISTIC and (first or tied) is not None:
            # the blend replaces the chosen logistic map when it beats it on
            # the rows its boosting scored: a large set's first fold, by
            # more than a standard error of their paired differences (tens
            # of thousands of rows: a tight one); after a tie, by any margin
            # (the two are equal within the noise there, and the blend's
            # loss is at most the mean of its two maps': cheaper than the
            # other folds, one boosting fit on all rows, and on the suite's
            # sighted nass seed 2 0.0001 lower test log-loss than the
            # logistic map)
            test, p_log, p_blend = first or tied
            d = _row_losses(y_idx[test], p_blend) - _row_losses(y_idx[test], p_log)
            wt = w[test] / w[test].sum()
            mean = np.dot(wt, d)
            se = np.sqrt(np.dot(wt, (d - mean) ** 2) / len(test))
            if first is not None and mean + se < 0:
                chosen = candidates.index(BLEND)
                reason = (
                    f"{reason}; on a large set the blend replaces the logistic "
                    f"map: lower log-loss on the first fold's rows by "
                    f"{-mean:.5f}, more than one standard error ({se:.5f})"
                )
            elif first is None and mean < 0:
                chosen = candidates.index(BLEND)
                reason = (
                    f"{reason}; after a tie the blend replaces the logistic map: "
                    f"lower log-loss on the rows its boosting scored by "
                    f"{-mean:.5f}"
                )
        status[chosen] = "chosen"
        search._record(
            names, n_params_rule, status, {"log_loss": fold_ll}, within, candidates
        )
        self.cv_results_ = search.cv_results_
        self.reason_ = reason.replace("calibrator", "map")
        if candidates[chosen] == LOGISTIC and self._alo_map is not None:
            self.method_, self.alpha_ = LOGISTIC, float(self._alphas[0])
            self.map_ = self._alo_map
        else:  # the blend reuses the leave-one-out logistic fit
            self._fit_method(candidates[chosen], scores, z, S, X, y, y_idx, w)
        del self._alo_map, self._lgb_data

    def _alo_rows(self, z, S, y_idx, w, fit=None):
        """The logistic map's approximate leave-one-out margins, per row, of
        its fit on all rows (kept in ``_alo_map`` for the refit)."""
        fitted, warm = (None, None) if fit is None else fit
        if fitted is None:
            wn = w / w.sum()
            self._alo_map, _, state = fit_logistic(
                z, S, y_idx, wn, self._alphas[0], theta0=warm, return_state=True
            )
            return alo_logits(z, S, y_idx, wn, self._alo_map, state=state)
        # the choice of the ridge strength fitted it already
        self._alo_map = fitted
        return warm

    def _fold_proba(self, method, scores, z, S, X, y, y_idx, w, train, test):
        """The held-out probabilities of a map fitted on ``train``, and its
        boosting rounds (None but for the boosting)."""
        if method == PASSTHROUGH:
            return _Inputs.from_scores(scores, self.response_).passthrough[test], None
        part = _Part(self)
        if method == GLOBAL:  # the scores alone: no copy of the segment columns
            S = X = np.zeros((len(y), 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            part._fit_method(
                method,
                scores[train],
                z[train],
                S[train],
                X[train],
                y[train],
                y_idx[train],
                w[train],
            )
            proba = part._proba(scores[test], z[test], S[test], X[test])
            return proba, getattr(part, "n_iter_", None)

    # -- predict ----------------------------------------------------------------

    def _proba(self, scores, z, S, X):
        if self.method_ == PASSTHROUGH:
            return _Inputs.from_scores(scores, self.response_).passthrough
        if self.method_ == GLOBAL:
            inputs = _Inputs.from_scores(scores, self.response_)
            est = self.global_estimator_
            return est.predict_proba(inputs.take(est))
        if self.method_ == LOGISTIC:
            return _proba_of(self.map_.logits(z, S))
        features = np.hstack([X, z])
        eta = z + self.map_.correction(features, z.shape[1])
        a, b = self.rescale_
        if self.method_ == BLEND:  # the mean of the two maps' logits
            return _proba_of(0.5 * (a * eta + b + self.logistic_map_.logits(z, S)))
        return _proba_of(a * eta + b)

    @fill_doc
    def predict_proba(self, scores, *, segments=None):
        """Calibrated probabilities.

        Parameters
        ----------
        %(predict_scores)s
        segments : DataFrame or array-like of shape (n_samples, n_columns)
            The same segment columns as at fit (levels unseen at fit and
            missing values get their column's baseline).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Calibrated probabilities, columns in the order of ``classes_``,
            floored at the machine epsilon (none is exactly 0 or 1).
        """
        check_is_fitted(self, "method_")
        scores = self._validate_scores(scores, reset=False)
        if self.response_ == PROBABILITIES:
            check_prob_values(scores, "scores")
        n = scores.shape[0]
        S, X = self._segment_features(segments, n, reset=False)
        z = _margin_logits(scores, self.response_)
        return floor_probabilities(self._proba(scores, z, S, X))

    @fill_doc
    def predict(self, scores, *, segments=None):
        """Class with the largest calibrated probability.

        Parameters
        ----------
        %(predict_scores)s
        segments : DataFrame or array-like of shape (n_samples, n_columns)
            The segment columns, as for :meth:`predict_proba`.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels taken from ``classes_``.
        """
        proba = self.predict_proba(scores, segments=segments)
        return self.classes_[np.argmax(proba, axis=1)]


def _screen(fold_ll, i, held, splits, y_idx, w, n_classes, n_done):
    """Why the boosting (row ``i``) and the blend (row ``i + 1``) are left
    out after their first ``n_done`` folds: neither has a lower mean fold
    log-loss there than a simpler map (None while one of them does); and
    those two means (the blend's only with a logistic map)."""
    mine = [fold_ll[i, :n_done].mean()]
    if LOGISTIC in held:
        mine.append(
            np.mean(
                [
                    _fold_scores(
                        y_idx[t],
                        _blend_proba(held[LOGISTIC][t], held[BOOSTING][t]),
                        w[t],
                        n_classes,
                        (),
                    )["log_loss"]
                    for _, t in splits[:n_done]
                ]
            )
        )
    simpler = fold_ll[:i, :n_done].mean(axis=1)
    simpler = simpler[np.isfinite(simpler)]
    if not (simpler.size and min(mine) >= simpler.min()):
        return None, mine
    return (
        f"screened out: on {_first_folds(n_done)} {min(mine):.5f} is no lower "
        f"than a simpler map's {simpler.min():.5f}"
    ), mine


def _first_folds(n_done):
    if n_done == 1:
        return "the first fold its log-loss"
    return f"the first {n_done} folds its mean log-loss"


def _ties(row_ll, i, held, splits, y_idx, w, n_done):
    """Why the boosting (row ``i``) and the blend are left out after their
    first ``n_done`` folds: the better of them beats the best simpler map on
    those folds' held-out rows by no more than one standard error of the
    per-row paired differences (None while it does); and those rows with
    the logistic map's and the blend's probabilities (None without a
    logistic map)."""
    rows = np.concatenate([t for _, t in splits[:n_done]])
    wr = w[rows]
    mine, tied = [row_ll[i, rows]], None
    if LOGISTIC in held:
        blend = _blend_proba(held[LOGISTIC][rows], held[BOOSTING][rows])
        mine.append(_row_log_loss(y_idx[rows], blend))
        tied = (rows, held[LOGISTIC][rows], blend)
    simpler = [row_ll[j, rows] for j in range(i)]
    simpler = [r for r in simpler if np.all(np.isfinite(r))]
    if not simpler:
        return None, None
    ref = min(simpler, key=lambda r: np.dot(wr, r))
    gain, se = _paired_gain(ref, min(mine, key=lambda r: np.dot(wr, r)), wr)
    if gain > se:
        return None, None
    return (
        f"screened out: on the first {n_done} folds it beats the best simpler "
        f"map by {gain:.5f} nats a held-out row, not more than one standard "
        f"error of the per-row paired differences ({se:.5f})"
    ), tied


def _clears(fold_ll, i, status, rule):
    """Whether candidate ``i``'s fold log-losses beat every evaluated simpler
    candidate's (those before it) by more than ``CLEAR_SE`` standard errors
    of their paired differences (rule "one_se" only)."""
    n_folds = fold_ll.shape[1]
    if rule != "one_se" or n_folds < 2 or status[i] != "evaluated":
        return False
    simpler = [
        j
        for j in range(i)
        if status[j] == "evaluated" and np.all(np.isfinite(fold_ll[j]))
    ]
    if not simpler or not np.all(np.isfinite(fold_ll[i])):
        return False
    for j in simpler:
        d = fold_ll[i] - fold_ll[j]
        if d.mean() + CLEAR_SE * d.std(ddof=1) / math.sqrt(n_folds) >= 0:
            return False
    return True


def _row_losses(y_idx, proba):
    return -np.log(proba[np.arange(len(y_idx)), y_idx])


def _is_platt(candidate):
    return isinstance(candidate, str) and candidate == "platt"


def _name(candidate):
    return candidate if isinstance(candidate, str) else type(candidate).__name__


class _Part(SegmentCalibrator):
    """A fold's fit: the parent's parameters, encoder and settings."""

    def __init__(self, parent):  # not an estimator of its own
        self.__dict__.update(parent.get_params())
        self.classes_ = parent.classes_
        self.response_ = parent.response_
        self._alphas = parent._alphas
        self._global = parent._global
        self.global_estimator_ = None


def _select_with_segments(
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
):
    """select_calibrator with segment columns: a SegmentCalibrator whose
    global candidate is this selection's choice among ``candidates``."""
    if prior is not None or groups is not None:
        raise ValueError(
            "segments cannot be combined with prior or groups in "
            "select_calibrator; apply the prior correction first, or pass a "
            "splitter's splits as cv."
        )
    glob = "auto"
    if candidates is not None:
        names = [c for c in candidates if not (isinstance(c, str) and c == PASSTHROUGH)]
        if len(names) != 1:
            raise ValueError(
                "with segments, candidates names at most one global calibrator "
                "(besides 'passthrough'), or None for the selection's choice; "
                f"got {candidates!r}."
            )
        glob = names[0]
    calibrator = SegmentCalibrator(
        global_calibrator=glob,
        cv=cv,
        response=response,
        rule=rule,
        min_events_per_parameter=min_events_per_parameter,
        random_state=random_state,
    )
    return calibrator.fit(scores, y, segments=segments, sample_weight=sample_weight)


_select._segment_selection = _select_with_segments
