"""Principal angles, linear CKA, domain manifolds and projection onto them."""

import numpy as np
import pytest

from bayesgeom.probes import (
    fit_domain_manifold,
    fit_domain_manifolds,
    linear_cka,
    manifold_angle_table,
    principal_angles,
    project_onto_manifold,
)


def _rot(d, seed):
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0]


def test_principal_angles_on_known_subspaces():
    e = np.eye(5)
    for deg in (0.0, 1e-4, 10.0, 45.0, 80.0, 90.0):
        th = np.radians(deg)
        a = e[[0, 1]]
        b = np.stack([e[0], np.cos(th) * e[1] + np.sin(th) * e[2]])
        np.testing.assert_allclose(principal_angles(a, b), [0.0, deg], atol=1e-9)
    # rotating both by the same orthogonal map and changing their spanning sets changes nothing
    q = _rot(5, 0)
    th = np.radians(30.0)
    a = np.stack([e[0], e[1]]) @ q.T
    b = np.array([[2.0, 0, 0, 0, 0], [1.0, np.cos(th), np.sin(th), 0, 0]]) @ q.T
    np.testing.assert_allclose(principal_angles(a, b), [0.0, 30.0], atol=1e-9)
    assert principal_angles(e[[0]], e[[3]])[0] == pytest.approx(90.0)
    assert principal_angles(e[[0, 1, 2]], e[[2]]).shape == (1,)


def test_cka_invariances_and_sensitivity():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((100, 10)) @ rng.standard_normal((10, 10))
    assert linear_cka(x, x) == pytest.approx(1.0)
    assert linear_cka(x, x @ _rot(10, 2)) == pytest.approx(1.0)  # orthogonal transform
    assert linear_cka(x, 3.7 * x + 5.0) == pytest.approx(1.0)  # isotropic scaling + shift
    y = rng.standard_normal((100, 6))
    assert linear_cka(x, y) == pytest.approx(linear_cka(y, x))
    assert linear_cka(x, y) < 0.3
    # not invariant to anisotropic scaling
    assert linear_cka(x, x * np.array([100.0] + [1.0] * 9)) < 0.9
    # Gram form (n < features) agrees with the feature form
    w = rng.standard_normal((8, 30))
    v = w @ rng.standard_normal((30, 40)) + rng.standard_normal((8, 40))
    wc, vc = w - w.mean(0), v - v.mean(0)
    ref = np.linalg.norm(vc.T @ wc) ** 2 / (np.linalg.norm(wc.T @ wc) * np.linalg.norm(vc.T @ vc))
    assert linear_cka(w, v) == pytest.approx(ref)


def _plane_data(n, d, plane, seed, noise=0.01):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 2)) * [3.0, 2.0] @ plane + noise * rng.standard_normal((n, d))


def test_domain_manifold_projection_and_angles():
    d = 12
    q = _rot(d, 3)
    math_plane, code_plane = q[:2], q[2:4]
    math = fit_domain_manifold("math", _plane_data(300, d, math_plane, 4), standardize=False)
    assert math.k == 2 and math.explained_variance > 0.99
    assert principal_angles(math.pca.components, math_plane).max() < 1.0
    inside = project_onto_manifold(math, _plane_data(50, d, math_plane, 5) + math.pca.mean)
    outside = project_onto_manifold(math, _plane_data(50, d, code_plane, 6) + math.pca.mean)
    assert inside.coords.shape == (50, 2)
    assert inside.total_residual_fraction < 0.01 and (inside.residual_fraction < 0.05).all()
    assert outside.total_residual_fraction > 0.99
    mans = fit_domain_manifolds(
        {
            "math": _plane_data(300, d, math_plane, 4),
            "code": _plane_data(300, d, code_plane, 7),
            "math2": _plane_data(300, d, math_plane, 8),
        },
        n_components=2,
        standardize=False,
    )
    table = {(r["domain_a"], r["domain_b"]): r for r in manifold_angle_table(mans)}
    assert set(table) == {("math", "code"), ("math", "math2"), ("code", "math2")}
    assert table[("math", "math2")]["max_angle_deg"] < 1.0
    assert table[("math", "code")]["min_angle_deg"] > 85.0


def test_domain_manifold_variance_threshold_picks_k():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((400, 6)) * [10, 5, 1, 0.1, 0.1, 0.1]
    assert fit_domain_manifold("a", x, variance=0.9, standardize=False).k == 2
    assert fit_domain_manifold("a", x, variance=0.999, standardize=False).k == 3
    assert fit_domain_manifold("a", x, n_components=4, standardize=False).k == 4
