"""PCA (centred or standardised) of a stream of row batches, via :class:`StreamingMoments`.

Only the float64 mean [d] and scatter [d, d] are kept, so millions of vectors fit in O(d²)
memory; :meth:`StreamingPCA.result` gives the same :class:`~probes.pca.PCAResult` as
:func:`~probes.pca.fit_pca` on the concatenated data (to round-off). Standardised PCA divides
the covariance by the outer product of the per-coordinate std (ddof = 1), i.e. it diagonalises
the correlation matrix, exactly like z-scoring the rows first.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .pca import PCAResult, pca_from_covariance, standardization_scale
from .streaming_moments import StreamingMoments


class StreamingPCA:
    """Feed batches [b, d] with :meth:`partial_fit`; read the fit with :meth:`result`."""

    def __init__(self, dim: int, standardize: bool = False) -> None:
        self.moments = StreamingMoments(dim)
        self.standardize = standardize

    def partial_fit(self, batch: object) -> StreamingPCA:
        self.moments.update(batch)
        return self

    def fit(self, batches: Iterable[object]) -> StreamingPCA:
        for b in batches:
            self.partial_fit(b)
        return self

    @property
    def n_samples(self) -> int:
        return self.moments.n

    def result(self, n_components: int | None = None) -> PCAResult:
        """The PCA of everything seen so far (needs ≥ 2 rows)."""
        cov = self.moments.covariance(ddof=1)
        scale = None
        if self.standardize:
            scale = standardization_scale(np.sqrt(np.clip(np.diag(cov), 0.0, None)))
            cov = cov / np.outer(scale, scale)
        return pca_from_covariance(cov, self.moments.mean, self.moments.n, scale, n_components)
