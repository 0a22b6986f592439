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


def _loader_sections(seed):
    return (
        "Parameters\n----------\nrandom_state : int, default=0\n"
        f"    {seed}\n\nReturns\n-------\ndata : sklearn.utils.Bunch\n"
        "    See :func:`load_dataset`."
    )


#: name -> the entry (numpydoc lines, unindented)
SHARED_ENTRIES = {
    # the fitted attributes every calibrator sets from its inputs
    "fitted_probability_inputs": _fitted_inputs("probability"),
    "fitted_score_inputs": _fitted_inputs("score"),
    "fitted_binary_probability_inputs": _fitted_inputs("probability", "2", " (1 or 2)"),
    "fitted_binary_score_inputs": _fitted_inputs("score", "2", " (1 or 2)"),
    # the inputs of the metrics
    "labels_and_probabilities": _labels_and_probabilities(""),
    "labels_and_cumulative_probabilities": _labels_and_probabilities(
        ", see :func:`cumulative_calibration_error`"
    ),
    # the sections of the loaders of sklcalib.datasets
    "synthetic_loader_sections": _loader_sections(
        "Seed of the samples and of the split."
    ),
    "bundled_loader_sections": _loader_sections("Seed of the split."),
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
