"""The plateau step of a training curve (probes.plateau)."""

import numpy as np
import pytest

from bayesgeom.probes.plateau import plateau_step


def test_plateau_step_of_synthetic_series():
    steps = np.arange(0, 1100, 100)
    # falls from 1 to 0 by step 300, then wobbles within ±0.05 (< 0.1 of the range)
    v = np.array([1.0, 0.6, 0.3, 0.04, -0.05, 0.05, 0.0, 0.02, -0.03, 0.01, 0.0])
    assert plateau_step(steps, v, 0.1) == 300
    assert plateau_step(steps, v, 0.005) == 1000  # a tighter band: only the last point
    rising = 1 - np.exp(-steps / 150.0)  # within 10 % of the range from about 3.3 time constants
    assert plateau_step(steps, rising, 0.1) == 400
    assert plateau_step(steps, np.where(steps == 200, np.nan, v), 0.1) == 300  # NaN left out


def test_constant_empty_and_bad_series():
    assert plateau_step([0, 5, 9], [2.0, 2.0, 2.0]) == 0
    assert plateau_step([0, 5], [np.nan, np.nan]) is None
    with pytest.raises(ValueError, match="increasing"):
        plateau_step([0, 5, 5], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="tolerance"):
        plateau_step([0, 1], [1.0, 2.0], 0.0)
