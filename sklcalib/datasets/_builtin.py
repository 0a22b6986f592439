"""The sets that need no extra: synthetic presets and scikit-learn's bundled data."""

import numpy as np
from sklearn import datasets as skdatasets
from sklearn.utils import check_random_state

from sklcalib._utils._docstrings import fill_doc
from sklcalib.datasets._splits import bunch as _bunch


def _flip_labels(y, fraction, n_classes, rng):
    """Replace ``fraction`` of the labels by a uniformly drawn *different* class.

    Label noise is what makes a network that memorises its training set
    over-confident on new data.
    """
    y = y.copy()
    n_flip = round(fraction * len(y))
    idx = rng.choice(len(y), size=n_flip, replace=False)
    shift = rng.randint(1, n_classes, size=n_flip)
    y[idx] = (y[idx] + shift) % n_classes
    return y


@fill_doc
def load_moons(random_state=0):
    """Noisy two moons (the synthetic set of Liang et al., Appendix A.11).

    2 000 points of :func:`sklearn.datasets.make_moons` with ``noise=0.3`` (the
    paper uses 0.2; 0.3 makes the classes overlap more, so that a network that
    separates the training points perfectly is over-confident), plus 4 noise
    features so that a 64-64 network can memorise the overlap.

    %(synthetic_loader_sections)s

    Examples
    --------
    >>> from sklcalib.datasets import load_moons
    >>> d = load_moons()
    >>> d.X_train.shape, d.n_classes
    ((1200, 6), 2)
    """
    rng = check_random_state(random_state)
    X, y = skdatasets.make_moons(n_samples=2000, noise=0.3, random_state=rng)
    X = np.hstack([X, rng.normal(scale=0.5, size=(len(X), 4))])
    return _bunch(
        "moons",
        X,
        y,
        random_state=random_state,
        n_classes=2,
        description="Two interleaving moons, noise=0.3, 2 informative + 4 noise "
        "features, 2000 samples.",
    )


@fill_doc
def load_blobs(random_state=0):
    """Overlapping Gaussian blobs with label noise.

    2 000 points in 30 dimensions from 5 isotropic Gaussian blobs of standard
    deviation 6 (centres drawn in [-10, 10]^30, so neighbouring blobs touch),
    with 10 % of the labels flipped to another class. The 30 dimensions let a
    64-64 network interpolate the noisy labels within a few hundred epochs,
    past which cross-entropy keeps growing its logits.

    %(synthetic_loader_sections)s

    Examples
    --------
    >>> from sklcalib.datasets import load_blobs
    >>> load_blobs().n_classes
    5
    """
    rng = check_random_state(random_state)
    X, y = skdatasets.make_blobs(
        n_samples=2000, n_features=30, centers=5, cluster_std=6.0, random_state=rng
    )
    y = _flip_labels(y, 0.1, 5, rng)
    return _bunch(
        "blobs",
        X,
        y,
        random_state=random_state,
        n_classes=5,
        description="5 overlapping Gaussian blobs in 30 dimensions (std 6), "
        "10% label noise, 2000 samples.",
    )


@fill_doc
def load_classification(random_state=0):
    """A :func:`sklearn.datasets.make_classification` preset with label noise.

    2 000 samples, 20 features (8 informative, 4 redundant), 4 classes with 2
    clusters each, ``class_sep=1.0`` and ``flip_y=0.1`` (10 % of the labels
    reassigned at random).

    %(synthetic_loader_sections)s

    Examples
    --------
    >>> from sklcalib.datasets import load_classification
    >>> load_classification().X_test.shape
    (400, 20)
    """
    return _classification_preset(
        "classification",
        random_state,
        n_features=20,
        n_informative=8,
        n_redundant=4,
        n_classes=4,
        class_sep=1.0,
    )


@fill_doc
def load_classification_hard(random_state=0):
    """A harder :func:`sklearn.datasets.make_classification` preset with label noise.

    2 000 samples, 30 features (10 informative, no redundant ones), 6 classes
    with 2 clusters each, ``class_sep=1.5`` and ``flip_y=0.1``. A 64-64 network
    interpolates the training labels while the test error stays near 40 %: the
    regime where cross-entropy is most over-confident.

    %(synthetic_loader_sections)s

    Examples
    --------
    >>> from sklcalib.datasets import load_classification_hard
    >>> d = load_classification_hard()
    >>> d.X_train.shape, d.n_classes
    ((1200, 30), 6)
    """
    return _classification_preset(
        "classification_hard",
        random_state,
        n_features=30,
        n_informative=10,
        n_redundant=0,
        n_classes=6,
        class_sep=1.5,
    )


def _classification_preset(name, random_state, **sizes):
    """2 000 rows of :func:`sklearn.datasets.make_classification` of these
    ``sizes``, 2 clusters a class and 10 % of the labels reassigned at random."""
    X, y = skdatasets.make_classification(
        n_samples=2000,
        n_clusters_per_class=2,
        flip_y=0.1,
        random_state=random_state,
        **sizes,
    )
    return _bunch(
        name,
        X,
        y,
        random_state=random_state,
        n_classes=sizes["n_classes"],
        description=f"make_classification: {sizes['n_features']} features "
        f"({sizes['n_informative']} informative), {sizes['n_classes']} classes, "
        "flip_y=0.1, 2000 samples.",
    )


def _load_bundled(name, loader, random_state=0):
    raw = loader()
    n_classes = len(np.unique(raw.target))
    target_names = getattr(raw, "target_names", None)
    if target_names is None:
        target_names = [str(k) for k in range(n_classes)]
    description = raw.DESCR.strip().splitlines()
    title = next((line for line in description if line.strip(". _-")), name)
    return _bunch(
        name,
        raw.data,
        raw.target,
        random_state=random_state,
        n_classes=n_classes,
        feature_names=getattr(raw, "feature_names", None),
        target_names=[str(t) for t in target_names],
        description=f"scikit-learn bundled data: {title.strip()} "
        f"({raw.data.shape[0]} samples, {raw.data.shape[1]} features).",
    )


@fill_doc
def load_digits(random_state=0):
    """Load scikit-learn's bundled 8x8 digits (1 797 images, 64 features, 10 classes).

    %(bundled_loader_sections)s

    Examples
    --------
    >>> from sklcalib.datasets import load_digits
    >>> load_digits().X_train.shape
    (1079, 64)
    """
    return _load_bundled("digits", skdatasets.load_digits, random_state)


@fill_doc
def load_breast_cancer(random_state=0):
    """Load scikit-learn's bundled Wisconsin breast cancer data (569 samples, binary).

    %(bundled_loader_sections)s

    Examples
    --------
    >>> from sklcalib.datasets import load_breast_cancer
    >>> load_breast_cancer().n_classes
    2
    """
    return _load_bundled("breast_cancer", skdatasets.load_breast_cancer, random_state)


@fill_doc
def load_wine(random_state=0):
    """Load scikit-learn's bundled wine data (178 samples, 13 features, 3 classes).

    %(bundled_loader_sections)s

    Examples
    --------
    >>> from sklcalib.datasets import load_wine
    >>> load_wine().X_test.shape
    (36, 13)
    """
    return _load_bundled("wine", skdatasets.load_wine, random_state)
