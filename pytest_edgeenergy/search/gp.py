"""A small Gaussian-process regressor (numpy only) for the ``auto`` strategy's surrogate.

Inputs are the knobs scaled to [0, 1] (frequencies, cores and batch sizes on a log scale);
outputs are log time, log power and the like. The mean is a ridge regression on given
features (a linear trend in each knob, or another workload's prediction: the prior), the
residual a Matern-5/2 kernel with one length scale per knob. Hyperparameters maximise the
marginal likelihood by a deterministic pattern search (no scipy needed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]

_SQRT5 = 5.0**0.5


def matern52(a: Array, b: Array, lengths: Array) -> Array:
    import numpy as np

    diff = (a[:, None, :] - b[None, :, :]) / lengths
    r = np.sqrt(np.sum(diff * diff, axis=-1))
    s = _SQRT5 * r
    out: Array = (1.0 + s + s * s / 3.0) * np.exp(-s)
    return out


@dataclass
class GP:
    """A fitted process; :meth:`predict` gives mean and variance at new inputs."""

    x: Array
    beta: Array
    alpha: Array
    chol: Array
    lengths: Array
    signal: float
    noise: float
    y_mean: float
    y_scale: float

    @classmethod
    def fit(cls, x: Array, y: Array, features: Array, ridge: float = 1e-2) -> GP:
        """Fit to inputs ``x`` (n, d), targets ``y`` (n,), mean features (n, m)."""
        import numpy as np

        y_mean = float(np.mean(y))
        y_scale = float(np.std(y)) or 1.0
        z = (y - y_mean) / y_scale
        m = features.shape[1]
        beta: Array = np.linalg.solve(features.T @ features + ridge * np.eye(m), features.T @ z)
        resid = z - features @ beta
        d = x.shape[1]
        params = np.array(
            [np.log(0.5)] * d + [np.log(max(float(np.var(resid)), 1e-3)), np.log(1e-3)]
        )

        def nll(p: Array) -> float:
            lengths, signal, noise = np.exp(p[:d]), float(np.exp(p[d])), float(np.exp(p[d + 1]))
            k = signal * matern52(x, x, lengths) + (noise + 1e-8) * np.eye(len(x))
            try:
                c = np.linalg.cholesky(k)
            except np.linalg.LinAlgError:
                return float("inf")
            a = np.linalg.solve(c.T, np.linalg.solve(c, resid))
            # A weak log-normal prior on each parameter keeps tiny data sets sane.
            penalty = 0.05 * float(np.sum((p - np.array([0.0] * d + [-1.0, -5.0])) ** 2))
            return float(0.5 * resid @ a + np.sum(np.log(np.diag(c)))) + penalty

        best = nll(params)
        step = 1.0
        while step > 0.1:
            improved = False
            for i in range(len(params)):
                for sign in (1.0, -1.0):
                    trial = params.copy()
                    trial[i] = np.clip(trial[i] + sign * step, -7.0, 3.0)
                    value = nll(trial)
                    if value < best - 1e-9:
                        best, params, improved = value, trial, True
            if not improved:
                step /= 2
        lengths: Array = np.exp(params[:d])
        signal = float(np.exp(params[d]))
        noise = float(np.exp(params[d + 1]))
        k = signal * matern52(x, x, lengths) + (noise + 1e-8) * np.eye(len(x))
        chol: Array = np.asarray(np.linalg.cholesky(k), dtype=np.float64)
        alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, resid))
        return cls(x, beta, alpha, chol, lengths, signal, noise, y_mean, y_scale)

    def predict(self, x: Array, features: Array, *, observed: bool = False) -> tuple[Array, Array]:
        """Mean and variance at ``x`` with mean features: of the latent function, or with
        ``observed`` of a measurement there (the noise added)."""
        import numpy as np

        ks = self.signal * matern52(x, self.x, self.lengths)
        mu = features @ self.beta + ks @ self.alpha
        v = np.linalg.solve(self.chol, ks.T)
        var = np.maximum(self.signal - np.sum(v * v, axis=0), 1e-12)
        if observed:
            var = var + self.noise
        return mu * self.y_scale + self.y_mean, var * self.y_scale**2
