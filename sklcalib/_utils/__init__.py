"""Private helpers shared by several sklcalib packages.

``_validation`` checks inputs and parameters; ``_binning`` defines the bins and
their statistics. Each idea is defined here once, so that no public package has
to import a private module of another.
"""
