"""The constants of the SplitMix64 stream that the resampling draws use.

Apart from :mod:`sklcalib._utils._resampling` (the numpy path) so that its
compiled kernels can read them without importing the module that imports
them back.
"""

import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
#: the top 53 bits of a draw to a float in [0, 1)
TO_UNIT = 2.0**-53
