"""Docstring entries that many public objects share, written once.

A docstring line that holds only ``%(name)s`` is replaced, when the module is
imported, by the entry ``name`` of :data:`SHARED_ENTRIES`, indented as that
line is (the scheme of matplotlib's ``_docstring.interpd``). ``help()``,
Sphinx's autodoc, numpydoc's validation and the doctests all read the filled
``__doc__``; only the source shows the placeholder.
"""

import re


def _fitted_inputs(kind, classes="n_classes", widths=""):
    return (
        f"classes_ : ndarray of shape ({classes},)\n"
        "    Class labels.\n"
        "n_features_in_ : int\n"
        f"    Number of {kind} columns seen in ``fit``{widths}.\n"
        "feature_names_in_ : ndarray of str\n"
        "    Column names, when ``fit`` got a DataFrame with string column names."
    )


def _labels_and_probabilities(see):
    return (
        "y_true : array-like of shape (n_samples,)\n    True labels.\n"
        "y_prob : array-like of shape (n_samples, n_classes) or (n_samples,)\n"
        f"    Predicted probabilities{see}."
    )


def _predict_scores(name):
    # the input of a fitted calibrator's prediction methods
    return (
        f"{name} : array-like of shape (n_samples, n_classes) or (n_samples,)\n"
        "    Scores of the same kind and width as those given to ``fit``."
    )


def _predict_sections(name):
    # the parameters and result of a fitted calibrator's ``predict``
    return (
        "Parameters\n----------\n" + _predict_scores(name) + "\n\nReturns\n-------\n"
        "y_pred : ndarray of shape (n_samples,)\n"
        "    The labels of the largest calibrated probabilities, from ``classes_``."
    )


def _loader_sections(seed):
    # the parameters and result of a loader
    return (
        "Parameters\n----------\nrandom_state : int, default=0\n"
        f"    {seed}\n\nReturns\n-------\ndata : sklearn.utils.Bunch\n"
        "    See :func:`load_dataset`."
    )


_NETCAL_WEIGHTS_NOTE = (
    "Integer ``sample_weight`` only: netcal has no weights, so a weight of k\n"
    "repeats the row k times. A class that is the label of all rows or none\n"
    "calibrates to that constant."
)

#: name -> the entry (numpydoc lines, unindented)
SHARED_ENTRIES = {
    # the inputs of the curvature diagnostics
    "curvature_inputs": (
        "net : fitted skorch net\n"
        "    A :class:`~sklcalib.NetClassifier` or any fitted skorch ``NeuralNet``"
        " with\n    ``module_`` and ``criterion_``.\n"
        "X : array-like of shape (n_samples, n_features)\n"
        "    Inputs (usually the training set).\n"
        "y : array-like of shape (n_samples,)\n"
        "    Labels as passed to ``fit`` (encoded with the net's ``label_encoder_``"
        " if\n    it has one)."
    ),
    # the net of the curvature examples: a linear model on 100 rows, 5 epochs
    "curvature_example_net": (
        ">>> import numpy as np\n"
        ">>> import torch\n"
        ">>> from sklearn.datasets import make_classification\n"
        ">>> from skorch import NeuralNetClassifier\n"
        ">>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)\n"
        ">>> X = X.astype(np.float32)\n"
        ">>> _ = torch.manual_seed(0)\n"
        ">>> net = NeuralNetClassifier(\n"
        "...     torch.nn.Linear(4, 2), criterion=torch.nn.CrossEntropyLoss,\n"
        "...     max_epochs=5, lr=0.1, train_split=None, verbose=0,\n"
        "... ).fit(X, y)"
    ),
    # the fitted attributes every calibrator sets from its inputs
    "fitted_probability_inputs": _fitted_inputs("probability"),
    "fitted_score_inputs": _fitted_inputs("score"),
    "fitted_binary_probability_inputs": _fitted_inputs("probability", "2", " (1 or 2)"),
    "fitted_binary_score_inputs": _fitted_inputs("score", "2", " (1 or 2)"),
    # the inputs of the metrics
    "labels_and_probabilities": _labels_and_probabilities(""),
    "labels_and_cumulative_probabilities": _labels_and_probabilities(
        ", see\n    :func:`~sklcalib.metrics.cumulative_calibration_error`"
    ),
    "labels_and_ece_probabilities": _labels_and_probabilities(
        ", see\n    :func:`~sklcalib.metrics.expected_calibration_error`"
    ),
    # the sections of the loaders of sklcalib.datasets
    "synthetic_loader_sections": _loader_sections(
        "Seed of the samples and of the split."
    ),
    "bundled_loader_sections": _loader_sections("Seed of the split."),
    # the models of the netcal wrappers (after their ``calibrators_`` line)
    "netcal_fitted_models": (
        "    The fitted binary netcal models: one for the positive class of a\n"
        "    binary problem, one per class otherwise.\n" + _fitted_inputs("probability")
    ),
    # the notes of the netcal wrappers
    "netcal_weights_note": _NETCAL_WEIGHTS_NOTE,
    "netcal_notes": f"Notes\n-----\n{_NETCAL_WEIGHTS_NOTE}",
    # the tail of the vector and matrix scalers: step count, inputs and the
    # note on binary scores
    "logit_scaler_steps_and_notes": (
        "n_iter_ : int\n"
        "    Number of Newton steps (or L-BFGS iterations) taken.\n"
        + _fitted_inputs("score")
        + "\n\nNotes\n-----\n"
        "Binary decision scores s of shape (n,) or (n, 1) are the logits [0, s]."
    ),
    # the parameter of the registry's questions about a number of classes
    "n_classes_parameter": (
        "Parameters\n----------\nn_classes : int\n    Number of classes of the problem."
    ),
    # the parameters of the benchmark's run folders
    "run_folder_parameters": (
        "Parameters\n----------\nbase : str or path-like\n"
        "    The ``--out`` folder; created if missing.\n"
        "now : datetime, optional\n"
        "    The time stamp of the folder's name (default: now)."
    ),
    # the scores a fitted calibrator predicts from (the parameter's name)
    "predict_scores": _predict_scores("scores"),
    "predict_scores_X": _predict_scores("X"),
    "predict_sections": _predict_sections("scores"),
    "predict_sections_X": _predict_sections("X"),
    # the parameter of the meta-estimators' prediction methods
    "estimator_samples_parameter": (
        "Parameters\n----------\nX : array-like of shape (n_samples, n_features)\n"
        "    Samples, as the estimator takes them."
    ),
    # the last parameter and the result of the alternative constructors of
    # PriorCorrection
    "prior_constructor_tail": (
        "**kwargs\n"
        "    Other parameters of the constructor.\n"
        "\n"
        "Returns\n"
        "-------\n"
        "correction : PriorCorrection\n"
        "    Unfitted."
    ),
    # the error of the registry's look-ups by name
    "unknown_name_raises": (
        "Raises\n------\nValueError\n    For an unknown name, listing the valid ones."
    ),
    # the rows of a benchmark run that its summaries and tables read
    "benchmark_rows_parameters": (
        "Parameters\n"
        "----------\n"
        "rows : list of dict\n"
        "    Rows of :func:`sklcalib.benchmark.runner.run_one`.\n"
        "datasets, losses : list of str, optional\n"
        "    Display order; default: order of first appearance."
    ),
    # the matrix of the matrix-scaling calibrators
    "matrix_coef": (
        "coef_ : ndarray of shape (n_classes, n_classes)\n    The matrix W."
    ),
    # the input of the tables of the boosting benchmark
    "boosting_rows_parameter": (
        "Parameters\n"
        "----------\n"
        "rows : list of dict\n"
        "    Rows of :func:`~sklcalib.benchmark.tabular.run_boosting`."
    ),
    # the result of the look-ups of installed names
    "available_names_returns": "Returns\n-------\nnames : list of str",
    # the result of the summary's text formatters
    "text_result_returns": "Returns\n-------\ntext : str",
    # the displays of sklcalib.plotting
    "display_from_estimator_parameters": (
        "estimator : fitted classifier\n"
        "    Any classifier with ``predict_proba`` and ``classes_``.\n"
        "X : array-like of shape (n_samples, n_features)\n    Input data.\n"
        "y : array-like of shape (n_samples,)\n    True labels.\n"
        "name : str, default=None\n"
        "    Legend name; defaults to the estimator's class name.\n"
        "**kwargs\n"
        "    Passed to :meth:`from_predictions` (``labels`` is taken from\n"
        "    ``estimator.classes_``)."
    ),
    "display_plot_axes": (
        "ax : matplotlib Axes, default=None\n"
        "    Axes to draw on; a new figure is made if None.\n"
        "name : str, default=None\n"
        "    Legend name; defaults to ``estimator_name``."
    ),
    # the stopping rule of the structured scalers
    "structured_scaler_stopping": (
        "max_iter : int, default=100\n"
        "    Maximum number of Newton steps. Above 1000 parameters (more than 30\n"
        "    classes for SMS, more than 500 for SVS) the Hessian is too large to\n"
        "    form and L-BFGS runs instead, for at most ``20 * max_iter``\n"
        "    iterations.\n"
        "tol : float, default=1e-8\n"
        "    Stop when the largest entry of the gradient of the penalised mean NLL\n"
        "    is at most ``tol``."
    ),
    # the attributes of the first two steps of the structured scalers
    "structured_scaler_steps_1_2": (
        "temperature_ : float\n"
        "    Temperature of step 1.\n"
        "epsilon_ : float\n"
        "    Weight of the uniform distribution in step 2, ``1 / (n + 1)``."
    ),
    # the intercept and step count of the structured scalers
    "structured_scaler_intercept_and_steps": (
        "intercept_ : ndarray of shape (n_classes,)\n"
        "    The intercept b.\n"
        "n_iter_ : int\n"
        "    Number of Newton steps (or L-BFGS iterations) taken."
    ),
    # the note on weights of the structured scalers
    "structured_scaler_weights_note": (
        "With ``sample_weight``, n is the sum of the weights and the NLL a\n"
        "weighted mean, so integer weights give the fit of repeated rows; weights\n"
        "summing to less than a tenth of the rows with positive weight warn (the\n"
        "mixing weight and the penalties would be those of that few rows: rescale\n"
        "relative weights to mean 1). Binary decision scores s of shape (n,) or\n"
        "(n, 1) are the logits [0, s]."
    ),
    # the reference of the structured scalers
    "sms_reference": (
        "E. Berta, D. Holzmüller, M. I. Jordan and F. Bach. Structured matrix\n"
        "scaling for multi-class calibration. AISTATS, 2026."
    ),
    # the inputs of the metrics
    "inputs_as_ece_takes_them": (
        "y_true, y_prob : array-like\n"
        "    The labels (n_samples,) and the predicted probabilities (n_samples,\n"
        "    n_classes) or (n_samples,), as :func:`expected_calibration_error`"
        " takes them."
    ),
    # the labels of the probability columns
    "column_labels": (
        "labels : array-like of shape (n_classes,), default=None\n"
        "    The label of every column of ``y_prob``."
    ),
}

_PLACEHOLDER = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(obj):
    """Decorator: ``obj``'s docstring with its placeholder lines filled.

    An unknown name raises a KeyError at import, so a typo cannot reach the
    rendered docs.

    Parameters
    ----------
    obj : class or function
        Its ``__doc__`` holds lines ``%(name)s``.

    Returns
    -------
    obj : class or function
        The same object, its ``__doc__`` filled.

    Examples
    --------
    >>> from sklcalib._utils._docstrings import fill_doc
    >>> @fill_doc
    ... class Calibrator:
    ...     '''A calibrator.
    ...
    ...     Attributes
    ...     ----------
    ...     %(fitted_score_inputs)s
    ...     '''
    >>> print(Calibrator.__doc__.splitlines()[4])
        classes_ : ndarray of shape (n_classes,)
    """

    def entry(match):
        indent, name = match.groups()
        lines = SHARED_ENTRIES[name].splitlines()
        return "\n".join(indent + line if line else line for line in lines)

    obj.__doc__ = _PLACEHOLDER.sub(entry, obj.__doc__)
    return obj
