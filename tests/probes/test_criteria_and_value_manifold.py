"""Paper III validation criteria and the wind-tunnel value-manifold summary."""

import numpy as np
import pytest

from bayesgeom.probes import (
    CriteriaThresholds,
    ordering_score,
    validation_criteria,
    value_manifold_summary,
)


def test_all_three_criteria_met():
    r = validation_criteria(
        pc1=0.45, pc1_pc2=0.6, key_orthogonality_per_layer=[0.1] * 10, focusing=0.82
    )
    assert (r.value_manifold, r.key_orthogonality, r.attention_focusing) == (True, True, True)
    assert r.n_met == 3 and r.label == "3/3"
    assert r.to_dict()["label"] == "3/3"


def test_criteria_boundaries():
    # PC1 alone is low but PC1+PC2 passes; exactly half the layers below 0.20 passes;
    # focusing must be strictly above 30 %
    r = validation_criteria(
        pc1=0.2, pc1_pc2=0.31, key_orthogonality_per_layer=[0.1, 0.19, 0.2, 0.5], focusing=0.30
    )
    assert r.value_manifold is True
    assert r.key_layer_fraction == pytest.approx(0.5) and r.key_orthogonality is True
    assert r.attention_focusing is False
    assert r.label == "2/3"
    r = validation_criteria(
        pc1=0.1, pc1_pc2=0.3, key_orthogonality_per_layer=[0.1, 0.3, 0.4], focusing=-0.1
    )
    assert r.n_met == 0 and r.label == "0/3"


def test_criteria_partial_inputs_and_custom_thresholds():
    r = validation_criteria(pc1=0.5, focusing=0.5)
    assert r.key_orthogonality is None and r.label == "2/2"
    strict = CriteriaThresholds(value_manifold=0.6)
    assert validation_criteria(pc1=0.5, pc1_pc2=0.55, thresholds=strict).label == "0/1"
    assert validation_criteria().label == "0/0"


def test_ordering_score():
    h = np.linspace(0, 1, 100)
    assert ordering_score(h**2, h) == pytest.approx(1.0)
    assert ordering_score(-3 * h, h) == pytest.approx(1.0)  # PC sign is irrelevant
    zigzag = np.where((np.arange(100) // 10) % 2 == 0, 0.0, 1.0)  # alternates across bins
    assert ordering_score(zigzag, h) == pytest.approx(1 / 9)
    sparse = np.array([0.0, 0.05, 1.0])  # only 3 of 10 bins are occupied
    assert ordering_score([0.0, 1.0, 2.0], sparse) == pytest.approx(1.0)
    assert np.isnan(ordering_score([1.0, 2.0], [0.5, 0.5]))


def test_value_manifold_summary_on_a_one_dimensional_manifold():
    rng = np.random.default_rng(0)
    n, d = 500, 32
    h = rng.uniform(0, 4.3, size=n)  # bits
    curve = np.column_stack([h, 0.3 * np.sin(h)])  # mostly along one axis
    basis = np.linalg.qr(rng.standard_normal((d, 2)))[0].T
    x = 5.0 * curve @ basis + 0.05 * rng.standard_normal((n, d))
    s = value_manifold_summary(x, h)
    assert s.pc1 > 0.95 and s.dim90 == 1
    assert abs(s.corr_pc_entropy[0]) > 0.99 and len(s.corr_pc_entropy) == 5
    assert s.linear_r2 > 0.99
    assert s.ordering_score == pytest.approx(1.0)
    noise = value_manifold_summary(rng.standard_normal((n, d)), h)
    assert noise.pc1 < 0.1 and noise.linear_r2 < 0.2 and noise.ordering_score < 0.8
