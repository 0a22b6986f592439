"""Implementation of :mod:`sklcalib.losses` (the public names live there)."""
