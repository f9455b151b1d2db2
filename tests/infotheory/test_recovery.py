"""The recovered fraction: 1 − KL_patched / KL_corrupt, the same in numpy and torch, NaN where
the corruption moved nothing, differentiable in torch."""

from __future__ import annotations

import numpy as np
import torch

from bayesgeom.infotheory import kl_bits, recovered_fraction


def test_closed_forms_and_the_undefined_case():
    got = recovered_fraction([0.0, 0.2, 0.8, 1.2, 0.3], [0.8, 0.8, 0.8, 0.8, 0.0])
    np.testing.assert_allclose(got[:4], [1.0, 0.75, 0.0, -0.5])
    assert np.isnan(got[4])
    assert recovered_fraction(0.5, 1.0) == 0.5


def test_numpy_and_torch_agree_from_real_kl():
    g = np.random.default_rng(0)
    p = g.dirichlet(np.ones(5), size=8)
    q_c = g.dirichlet(np.ones(5), size=8)
    q_p = 0.7 * p + 0.3 * q_c  # a patch that moves most of the way back
    ref = recovered_fraction(kl_bits(p, q_p), kl_bits(p, q_c))
    assert (ref > 0).all() and (ref < 1).all()
    t = recovered_fraction(kl_bits(torch.tensor(p), torch.tensor(q_p)),
                           kl_bits(torch.tensor(p), torch.tensor(q_c)))
    assert isinstance(t, torch.Tensor)
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-12)


def test_differentiable_in_torch():
    a = torch.tensor([0.2, 0.4], requires_grad=True)
    out = recovered_fraction(a, torch.tensor([0.8, 0.0]))
    out[0].backward()
    assert float(a.grad[0]) == -1.25 and torch.isnan(out[1])
