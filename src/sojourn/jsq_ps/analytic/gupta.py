"""λ_n from the closed-form fits of Gupta, Harchol-Balter, Sigman & Whitt (2007) (§3.3)."""
from __future__ import annotations

import numpy as np


def gupta_lambdas(load: float, service_rate: float, servers: int, size: int, clamp: bool = False) -> np.ndarray:
    """λ_0..λ_{size−1} by the §3.3 fits (ρ = Λ/(Rμ), R = servers).

    ``clamp=False`` (faithful) keeps the published values, including λ_1 < 0 at R=1, low ρ (§3.3
    caveat: R=1, ρ=0.01 gives λ_1 = −0.92). ``clamp=True`` replaces negative rates by 0.
    """
    rho, mu, R = float(load), float(service_rate), int(servers)
    a = rho / (1 - rho)
    b = (-0.0263 * rho**2 + 0.0054 * rho + 0.1155) / (rho**2 - 1.939 * rho + 0.9534)
    c = -6.2973 * rho**4 + 14.3382 * rho**3 - 12.3532 * rho**2 + 6.2557 * rho - 1.005
    d = (-226.1839 * rho**2 + 342.3814 * rho + 10.2851) / (rho**3 - 146.2751 * rho**2 - 481.1256 * rho + 599.9166)
    e = 0.4462 * rho**3 - 1.8317 * rho**2 + 2.4376 * rho - 0.0512
    lam0 = mu * (a - b * c**R - d * e**R)  # §3.3, Gupta (12)
    u = -0.29 * rho**3 + 0.8822 * rho**2 - 0.5349 * rho + 1.0112
    v = -0.1864 * rho**2 + 1.195 * rho - 0.016
    lam2 = mu * u * v**R  # §3.3, Gupta (11)
    lam1 = mu * ((mu / lam0) * (rho - rho ** (R + 1)) / (1 - rho) + rho**R - 1) / (1 + lam2 / mu - rho**R)  # §3.3, Gupta (9)
    out = np.full(size, mu * rho**R)  # §3.3, Gupta (7): λ_n = μρ^R, n ≥ 3
    out[: min(size, 3)] = [lam0, lam1, lam2][: min(size, 3)]
    if clamp:
        out = np.maximum(out, 0.0)
    return out
