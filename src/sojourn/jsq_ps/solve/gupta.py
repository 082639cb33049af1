"""λ_n from the closed-form fits of Gupta, Harchol-Balter, Sigman & Whitt (2007) (§3.3).

The fit of λ_0 (Gupta (12)) has a pole: the denominator ρ³ − 146.2751ρ² − 481.1256ρ + 599.9166 of d(ρ)
vanishes at ρ = :data:`FIT_POLE` ≈ 0.9654, so λ_0 runs to −∞ below it and +∞ above it (R = 3: λ_0 = −13.5
at ρ = 0.96, 63.0 at ρ = 0.97, against Λ = 2.91), and λ_1, which Gupta (9) derives from λ_0, turns
negative. :func:`admissible_gupta_lambdas` (the corrected methods' input) keeps the fit wherever it
describes a possible JSQ server and otherwise moves λ_0 to the nearest value that does.
"""
from __future__ import annotations

import numpy as np

#: the root in (0, 1) of d(ρ)'s denominator in Gupta (12): the λ_0 fit is singular there
FIT_POLE = 0.9654127741298042


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
    lam1 = _lambda1(lam0, lam2, rho, mu, R)
    out = np.full(size, mu * rho**R)  # §3.3, Gupta (7): λ_n = μρ^R, n ≥ 3
    out[: min(size, 3)] = [lam0, lam1, lam2][: min(size, 3)]
    if clamp:
        out = np.maximum(out, 0.0)
    return out


def _lambda1(lam0, lam2, rho, mu, R):
    """Gupta (9): the λ_1 that makes the birth–death law with λ_0, λ_1, λ_2, μρ^R, … have p_0 = 1 − ρ."""
    return (
        mu * ((mu / lam0) * (rho - rho ** (R + 1)) / (1 - rho) + rho**R - 1) / (1 + lam2 / mu - rho**R)
    )  # §3.3, Gupta (9)


def admissible_gupta_lambdas(load: float, service_rate: float, servers: int, size: int):
    """Gupta's λ_n (§3.3) projected onto the rates a JSQ server can have; returns (λ, info).

    Constraints (Λ = Rρμ): every λ_n ≤ Λ (a server never receives more than the whole stream:
    λ_n = Λ·P(min = n)/E[#servers at n] and E[#servers at n] ≥ P(min = n)); λ_0 ≥ λ_1 ≥ λ_2 ≥ λ_3 = μρ^R
    (JSQ sends arrivals to shorter queues; every exact chain profile we computed decreases to μρ^R,
    tests/jsq_ps/test_solve_guards.py); and Gupta (9), p_0 = 1 − ρ, which keeps each server's load at ρ.
    λ_2 is clipped to [μρ^R, Λ]; then λ_1(λ_0) of Gupta (9) decreases in λ_0, so the constraints leave
    an interval λ_0 ∈ [x_lo, x_hi]: x_lo solves λ_0 = λ_1(λ_0), x_hi solves λ_1(λ_0) = λ_2 (capped at Λ).
    The fitted λ_0 is kept when inside it; otherwise the fit has failed (near its pole, or negative at
    low load for even R) and λ_0 = x_hi, the admissible profile with the smallest λ_1 (= λ_2): a busy
    server gets the Gupta tail rate. That end, rather than the nearest one, because λ_1 ≪ λ_0 in
    every exact profile (JSQ seldom sends to a busy server while one is idle): against the exact
    chain at R = 2, ρ = 0.01 it gives W = 1e-4 where λ_0 = λ_1 (the other end) gives 1e-2.
    λ_1 is recomputed by Gupta (9). Kept unchanged for ρ ≤ 0.90 at every R ≤ 10 apart from low load
    (ρ ≤ 0.17); moved for ρ ≥ 0.955 at every R ≤ 10.
    """
    rho, mu, R = float(load), float(service_rate), int(servers)
    raw = gupta_lambdas(rho, mu, R, max(size, 4))
    Lam = R * rho * mu
    r = rho**R
    lam2 = min(max(raw[2], mu * r), Lam)
    # Gupta (9) as λ_1 = μ(μA/x − B)/C with x = λ_0
    A = rho * (1 - r) / (1 - rho)
    B = 1 - r
    C = 1 - r + lam2 / mu
    x_hi = min(mu * A / (B + lam2 * C / mu), Lam)  # λ_1(x) ≥ λ_2  ⇔  x ≤ μA/(B + λ_2C/μ)
    x_lo = mu * (-B + np.sqrt(B * B + 4 * C * A)) / (2 * C)  # x ≥ λ_1(x)  ⇔  Cx² + μBx − μ²A ≥ 0
    x_lo = min(x_lo, x_hi)
    inside = bool(np.isfinite(raw[0]) and x_lo <= raw[0] <= x_hi)
    lam0 = float(raw[0]) if inside else x_hi
    out = raw[:size].copy()
    lam1 = min(max(_lambda1(lam0, lam2, rho, mu, R), lam2), lam0)  # inside [λ_2, λ_0] but for round-off
    out[: min(size, 3)] = [lam0, lam1, lam2][: min(size, 3)]
    info = {"gupta_lambda0_fit": float(raw[0]), "gupta_lambda0_moved": int(not inside),
            "gupta_lambda0_interval": (float(x_lo), float(x_hi))}
    return out, info
