"""Exact results for split-merge (M/G/⌊n/r⌋ with G = S_{q:r}; split_merge.md §2), each labelled with its method.

* stability λ E[S_{q:r}] < ⌊n/r⌋ and the maximal throughput ⌊n/r⌋/E[S_{q:r}] (the paper's (4)-(5));
* c = ⌊n/r⌋ = 1: M/G/1, mean delay by Pollaczek–Khinchine (the paper's (6), = λβB⁻²1/(1+λβB⁻¹1) for PH);
  for a PH replica law also the delay and latency laws (Asmussen: W ~ PH(λβ(−B)⁻¹, B + bλβ(−B)⁻¹)
  with an atom 1 − ρ at 0), hence exact percentiles;
* q = 1 and exponential replicas: M/M/c at rate rμ, Erlang C (the paper's (7)-(9)), with the delay and
  latency laws;
* any c and a PH replica law: the mean delay of M/PH/c by a level-independent QBD beyond level c (phases:
  how many busy super-servers are in each phase of S_{q:r}), R by logarithmic reduction, the boundary
  levels 0..c by linear level reduction. Exact up to the R iteration's tolerance; its size is
  C(c+d−1, d−1) phases at level c (d phases of S_{q:r}), so it is only attempted up to ``qbd_max_phases``.
  No level is truncated (the levels beyond c are summed in closed form, (I − R)⁻¹); what limits it is the
  precision of G: its rows must sum to 1, and a defect δ = max|1 − G1| moves the mean delay by about
  δ/(1 − ρ) relative (measured against Erlang C: 1.3e-10 at ρ = 0.999, 2e-6 at 0.99999, −300 % at
  1 − 1e-8, where round-off dominates). The QBD value is called exact only when that estimate is
  < :data:`QBD_RTOL` and the iteration converged; otherwise NaN, ``delay_method = "none"``, and the
  estimate in ``qbd_relative_error``.

Fork-join with q = 1 and r dividing n is split-merge path by path (:func:`fork_join_is_split_merge`), and gets
its exact values, labelled so. Anything else (other fork-join, a non-PH law with c > 1, a too large QBD) has no
exact answer here:
``method = "none"`` and NaN, and the caller simulates.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.laws import phase_type as ph
from ..core.laws.distributions import Exponential
from .model import SplitMerge
from .order_stats import order_statistic_moments, order_statistic_ph

QBD_MAX_PHASES = 700  # largest level-c phase count solved densely (595 phases: ~1.5 s on one core)
#: a QBD mean delay is exact when its estimated relative error δ/(1 − ρ) is below this (module doc); the
#: precision the QBD is held to against Erlang C and Pollaczek–Khinchine (tests/split_merge, rel=1e-9)
QBD_RTOL = 1e-9
#: phases of the boundary levels 0..c together, C(c+d, d), beyond which the QBD is not attempted (a one-phase
#: law has one phase per level, so the level-c cap alone lets c grow without bound: -n 1e12 hung)
QBD_MAX_BOUNDARY = 10**7
#: above this many super-servers Erlang B is computed from the Poisson law instead of its O(c) recursion
ERLANG_RECURSION_MAX = 10**6
#: iterations of the logarithmic reduction (quadratic: ~log2(1/(1 − ρ)) + 5 are needed)
QBD_MAX_ITERATIONS = 60


# ---------------------------------------------------------------------------------------------
# closed forms
def erlang_c(c: int, a: float) -> float:
    """C(c, a): probability of waiting in M/M/c with offered load a = λ/ν < c (the paper's (9)).

    Computed by the Erlang B recursion B(k) = a B(k−1)/(k + a B(k−1)), C = B/(1 − ρ(1 − B)), stable for large c;
    beyond :data:`ERLANG_RECURSION_MAX` servers from B = P(N = c)/P(N ≤ c), N ~ Poisson(a) (the truncated Poisson
    form of Erlang B), in logs, so its cost does not grow with c.
    """
    if c > ERLANG_RECURSION_MAX:
        from scipy.stats import poisson

        b = math.exp(float(poisson.logpmf(c, a)) - float(poisson.logcdf(c, a)))
    else:
        b = 1.0
        for k in range(1, int(c) + 1):
            b = a * b / (k + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


def pollaczek_khinchine(lam: float, m1: float, m2: float) -> float:
    """M/G/1 mean waiting time λE[S²]/(2(1 − λE[S])) (split_merge.md §2(c))."""
    return lam * m2 / (2.0 * (1.0 - lam * m1))


def mph1_delay_ph(lam: float, beta, B):
    """Waiting time of M/PH/1 FCFS as PH(α₊, B + b α₊) with α₊ = λβ(−B)⁻¹ (atom 1 − ρ at 0; Asmussen 2003 VIII.5)."""
    beta, B = np.asarray(beta, float), np.asarray(B, float)
    a_plus = lam * np.linalg.solve(-B.T, beta)
    return a_plus, B + np.outer(ph.exit_vector(B), a_plus)


# ---------------------------------------------------------------------------------------------
# M/PH/c by a QBD
def _log_reduction_G(A0, A1, A2, tol=1e-13, max_iter=None):
    """(G, converged): the minimal solution G of A2 + A1 G + A0 G² = 0 (Latouche–Ramaswami logarithmic
    reduction), and whether a stopping rule (rows of G summing to 1, or the remaining increment T, within
    ``tol``) was met within ``max_iter`` iterations (default :data:`QBD_MAX_ITERATIONS`)."""
    max_iter = QBD_MAX_ITERATIONS if max_iter is None else int(max_iter)
    n = A1.shape[0]
    inv = np.linalg.inv(-A1)
    H, L = inv @ A0, inv @ A2
    G, T = L.copy(), H.copy()
    eye = np.eye(n)
    for _ in range(max_iter):
        U = H @ L + L @ H
        M = np.linalg.inv(eye - U)
        H, L = M @ (H @ H), M @ (L @ L)
        G = G + T @ L
        T = T @ H
        if np.max(np.abs(1.0 - G.sum(axis=1))) < tol or np.max(np.abs(T)) < tol:
            return G, True
    return G, False


def mphc_qbd(lam: float, c: int, beta, B, max_phases: int = QBD_MAX_PHASES) -> dict | None:
    """Mean number waiting, probability of waiting and mean delay of M/PH/c FCFS (Little: E[D] = E[Q]/λ).

    None when level c has more than ``max_phases`` phases. Levels 0..c: N busy servers; beyond c the
    level is the queue length and the phases those of level c (QBD with A0 = λI, A1 = L_c − λI,
    A2 = completions replaced by the head of the queue starting in phase k w.p. β_k).
    """
    beta, B = np.asarray(beta, float), np.asarray(B, float)
    d = beta.size
    if math.comb(c + d - 1, d - 1) > max_phases or math.comb(c + d, d) > QBD_MAX_BOUNDARY:
        return None
    t = ph.exit_vector(B)
    levels = [ph.occupancy_block(B, N) for N in range(c + 1)]  # (states, index, L_N without −λ)

    def up(N):  # N -> N+1 (N < c): a new workunit starts in phase k
        s0, _, _ = levels[N]
        s1, i1, _ = levels[N + 1]
        U = np.zeros((len(s0), len(s1)))
        for i, s in enumerate(s0):
            for k in range(d):
                if beta[k] > 0:
                    u = list(s)
                    u[k] += 1
                    U[i, i1[tuple(u)]] += lam * beta[k]
        return U

    def down(N, replace):  # N -> N-1 (N <= c, no replacement) or c+1 -> c (replace: head of the queue starts)
        s0, _, _ = levels[N]
        s1, i1, _ = levels[N - 1] if not replace else levels[N]
        D = np.zeros((len(s0), len(s1)))
        for i, s in enumerate(s0):
            for k in range(d):
                if s[k] == 0 or t[k] <= 0:
                    continue
                u = list(s)
                u[k] -= 1
                if not replace:
                    D[i, i1[tuple(u)]] += s[k] * t[k]
                else:
                    for j in range(d):
                        if beta[j] > 0:
                            w = list(u)
                            w[j] += 1
                            D[i, i1[tuple(w)]] += s[k] * t[k] * beta[j]
        return D

    nc = len(levels[c][0])
    A0 = lam * np.eye(nc)
    A1 = levels[c][2] - lam * np.eye(nc)
    A2 = down(c, replace=True)
    G, converged = _log_reduction_G(A0, A1, A2)
    defect = float(np.max(np.abs(1.0 - G.sum(axis=1))))  # G is stochastic for a stable QBD (Latouche–Ramaswami)
    rho = lam * ph.mean(beta, B) / c
    R = A0 @ np.linalg.inv(-(A1 + A0 @ G))
    # linear level reduction: pi_{N+1} = pi_N R_N
    Rs = [None] * (c + 1)
    Rs[c] = R
    below = A2  # down block from level N+2 to N+1, starting with c+1 -> c
    for N in range(c - 1, -1, -1):
        L_next = levels[N + 1][2] - lam * np.eye(len(levels[N + 1][0]))
        Rs[N] = up(N) @ np.linalg.inv(-(L_next + Rs[N + 1] @ below))
        below = down(N + 1, replace=False)
    pis = [np.ones(1)]
    for N in range(c):
        pis.append(pis[-1] @ Rs[N])
    eye = np.eye(nc)
    inv_IR = np.linalg.inv(eye - R)
    total = sum(p.sum() for p in pis[:c]) + pis[c] @ inv_IR @ np.ones(nc)
    pis = [p / total for p in pis]
    p_wait = float(pis[c] @ inv_IR @ np.ones(nc))
    queue = float(pis[c] @ R @ inv_IR @ inv_IR @ np.ones(nc))
    rel = defect / (1.0 - rho) if rho < 1 else math.inf  # estimated relative error of the mean delay (module doc)
    return {"mean_queue": queue, "p_wait": p_wait, "mean_delay": queue / lam, "phases": nc,
            "residual": float(np.max(np.abs(A0 + R @ A1 + R @ R @ A2))), "converged": bool(converged),
            "g_defect": defect, "relative_error": rel, "exact": bool(converged and rel < QBD_RTOL)}


# ---------------------------------------------------------------------------------------------
# the labelled answer for a spec
#: the ``reduction`` of :func:`exact_results` where fork-join takes split-merge's values (its methods unchanged)
REDUCTION = "fork-join with q = 1 and r dividing n is split-merge"


def fork_join_is_split_merge(spec: SplitMerge) -> bool:
    """Fork-join with cancellation (q = 1, r dividing n) is split-merge exactly, path by path: the hosts fall
    into n/r groups of r with equal remaining work (true when all are idle; a workunit's r replicas go to the r
    least-loaded hosts, which are then a group's worth of equal loads, all start together and all are released
    at the first result, so they stay equal). A workunit therefore starts when the earliest group frees and
    holds it S_1:r: FCFS M/G/(n/r) with G = S_1:r, split-merge's queue. With q > 1 the hosts of the q − 1 earlier
    results are free at once in fork-join but held in split-merge; with r not dividing n, the n mod r hosts
    that split-merge never uses take replicas in fork-join."""
    return spec.model == "fork_join" and spec.quorum == 1 and spec.hosts % spec.replicas == 0



def exact_results(spec: SplitMerge, percentiles=(0.5, 0.9, 0.99), qbd_max_phases: int = QBD_MAX_PHASES) -> dict:
    """Everything known exactly about ``spec`` (split-merge model), each with the method that gave it.

    Keys: mean_service, service_second_moment, moments_method ('phase-type' | 'deterministic' |
    'quadrature'), super_servers, max_throughput, load, mean_delay, mean_latency, delay_method
    ('pollaczek-khinchine' | 'erlang-c' | 'qbd' | 'none'), p_wait, percentiles, latency_percentile and
    delay_percentile (NaN unless the delay law is known: c = 1 with PH replicas, or Erlang C),
    percentile_method, exact (True when mean_delay is exact), reduction ('' or :data:`REDUCTION`, where a
    fork-join spec takes split-merge's values), qbd_phases and qbd_relative_error (the
    QBD's estimated relative error, NaN where no QBD was solved; above :data:`QBD_RTOL` the QBD value is not
    exact and is left out).
    """
    q, r, c, lam = spec.quorum, spec.replicas, spec.super_servers, spec.arrival_rate
    m1, m2, how = order_statistic_moments(spec.replica_law, q, r)
    ps = np.atleast_1d(np.asarray(percentiles, dtype=float))
    out = {"mean_service": m1, "service_second_moment": m2, "moments_method": how, "super_servers": c,
           "max_throughput": c / m1, "rho": lam * m1 / c, "mean_delay": math.nan, "mean_latency": math.nan,
           "delay_method": "none", "p_wait": math.nan, "percentiles": ps,
           "latency_percentile": np.full(ps.shape, np.nan), "delay_percentile": np.full(ps.shape, np.nan),
           "percentile_method": "none", "exact": False, "reduction": "", "qbd_phases": 0,
           "qbd_relative_error": math.nan}
    if spec.model != "split_merge":
        if not fork_join_is_split_merge(spec):
            return out
        return {**exact_results(spec.with_model("split_merge"), percentiles, qbd_max_phases), "reduction": REDUCTION}
    law_ph = order_statistic_ph(spec.replica_law, q, r)
    if c == 1:
        out.update(mean_delay=pollaczek_khinchine(lam, m1, m2), delay_method="pollaczek-khinchine",
                   p_wait=lam * m1, exact=True)
        if law_ph is not None:
            wa, wT = mph1_delay_ph(lam, *law_ph)
            la, lT = ph.convolution(wa, wT, *law_ph)
            out.update(delay_percentile=_quantiles(wa, wT, ps), latency_percentile=_quantiles(la, lT, ps),
                       percentile_method="m/ph/1 delay law (phase-type)")
    elif q == 1 and isinstance(spec.replica_law, Exponential):
        nu = r * spec.replica_law.rate
        C = erlang_c(c, lam / nu)
        gap = c * nu - lam
        out.update(mean_delay=C / gap, delay_method="erlang-c", p_wait=C, exact=True)
        wa, wT = np.array([C]), np.array([[-gap]])
        la, lT = ph.convolution(wa, wT, np.ones(1), np.array([[-nu]]))
        out.update(
            delay_percentile=_quantiles(wa, wT, ps, expm=True),
            latency_percentile=_quantiles(la, lT, ps, expm=True),
            percentile_method="erlang-c delay law",
        )
    elif law_ph is not None:
        res = mphc_qbd(lam, c, *law_ph, max_phases=qbd_max_phases)
        if res is not None:
            out.update(qbd_phases=res["phases"], qbd_relative_error=res["relative_error"])
        if res is not None and res["exact"]:  # else its tolerance was not reached: no exact value (NaN)
            out.update(mean_delay=res["mean_delay"], delay_method="qbd", p_wait=res["p_wait"], exact=True)
    if out["exact"]:
        out["mean_latency"] = out["mean_delay"] + m1
    return out


class UniformizedSF:
    """P(X > x) = Σ_k Poisson(k; θx) · a P^k 1 with P = I + T/θ, θ = max_i −T_ii (uniformization): the scalar
    sequence g_k = a P^k 1 is computed once (mat-vecs, extended as larger x need more terms), after which any x
    costs one Poisson-weighted sum. Exact up to the truncated Poisson tail (< 1e-14)."""

    def __init__(self, a, T):
        self.theta = float(np.max(-np.diag(T)))
        self.P = np.eye(T.shape[0]) + T / self.theta
        self.a = np.asarray(a, float)
        self.v = np.ones(T.shape[0])
        self.g = [float(self.a @ self.v)]

    def __call__(self, x: float) -> float:
        from scipy.stats import poisson

        mu = self.theta * x
        K = int(mu + 12.0 * math.sqrt(mu + 1.0) + 30)
        while len(self.g) <= K:
            self.v = self.P @ self.v
            self.g.append(float(self.a @ self.v))
        lo = max(0, int(mu - 12.0 * math.sqrt(mu + 1.0) - 30))
        k = np.arange(lo, K + 1)
        return float(poisson.pmf(k, mu) @ np.asarray(self.g[lo:K + 1]))


class ExpmSF:
    """P(X > x) = a exp(T x) 1 by scipy's matrix exponential: for the one- and two-phase laws of Erlang C, whose
    rates grow with the number of super-servers (c ν − λ), where uniformization would need ~(c ν − λ) x steps."""

    def __init__(self, a, T):
        self.a, self.T = np.asarray(a, float), np.asarray(T, float)

    def __call__(self, x: float) -> float:
        from scipy.linalg import expm

        return float(self.a @ expm(self.T * x) @ np.ones(self.T.shape[0]))


def _quantiles(a, T, ps, expm=False):
    """Quantiles of PH(a, T) (atom 1 − Σa at 0) by Brent's method on the uniformized survival function (with
    ``expm``: on the matrix exponential, for small T with large rates)."""
    from scipy.optimize import brentq

    a, T = np.asarray(a, float), np.asarray(T, float)
    sf = ExpmSF(a, T) if expm else UniformizedSF(a, T)
    out = np.full(ps.shape, np.nan)
    scale = max(ph.mean(a, T) / max(a.sum(), 1e-300), 1e-300)
    for i, p in enumerate(ps):
        if p <= 1.0 - a.sum():
            out[i] = 0.0
            continue
        lo, hi = 0.0, scale
        while sf(hi) > 1.0 - p:
            lo, hi = hi, 2.0 * hi
        out[i] = brentq(lambda x, p: sf(x) - (1.0 - p), lo, hi, args=(p,), xtol=1e-10 * hi, rtol=1e-12)
    return out


def exact_dataset(spec: SplitMerge, percentiles=(0.5, 0.9, 0.99), qbd_max_phases: int = QBD_MAX_PHASES):
    """:func:`exact_results` as an ``xarray.Dataset`` (dim ``percentile``); every variable says in its
    ``method`` attribute how it was obtained, and ``is_exact`` (1/0) whether the mean delay is exact."""
    import xarray as xr

    from ..core.files.io import provenance

    e = exact_results(spec, percentiles, qbd_max_phases)
    U = "time units of the replica law"
    mom = e["moments_method"]
    ds = xr.Dataset(
        {
            "mean_service": (
                (),
                e["mean_service"],
                {"long_name": "E[S_q:r], mean workunit service time", "units": U, "method": mom},
            ),
            "service_second_moment": (
                (),
                e["service_second_moment"],
                {"long_name": "E[S_q:r^2]", "units": "time units squared", "method": mom},
            ),
            "max_throughput": (
                (),
                e["max_throughput"],
                {"long_name": "maximal throughput floor(n/r)/E[S_q:r]", "units": "1/" + U, "method": mom},
            ),
            "rho": ((), e["rho"], {"long_name": "load per super-server lambda E[S_q:r]/floor(n/r)", "units": "1"}),
            "mean_delay": (
                (),
                e["mean_delay"],
                {"long_name": "mean delay (waiting time before service)", "units": U, "method": e["delay_method"]},
            ),
            "mean_latency": (
                (),
                e["mean_latency"],
                {"long_name": "mean latency (delay + service)", "units": U, "method": e["delay_method"]},
            ),
            "p_wait": (
                (),
                e["p_wait"],
                {"long_name": "probability that a workunit waits", "units": "1", "method": e["delay_method"]},
            ),
            "latency_percentile": (
                ("percentile",),
                e["latency_percentile"],
                {"long_name": "latency percentile", "units": U, "method": e["percentile_method"]},
            ),
            "delay_percentile": (
                ("percentile",),
                e["delay_percentile"],
                {"long_name": "delay percentile", "units": U, "method": e["percentile_method"]},
            ),
            "is_exact": (
                (),
                np.int8(e["exact"]),
                {
                    "long_name": "1 if mean_delay/mean_latency are exact, 0 if "
                    "unavailable here (NaN; simulate instead)",
                    "units": "1",
                },
            ),
        },
        coords={"percentile": ("percentile", e["percentiles"], {"long_name": "probability level", "units": "1"})},
    )
    ds.attrs.update(provenance(spec.to_dict(), title="Exact results of " + spec.describe(), spec=spec.to_json(),
                               result_kind="exact" if e["exact"] else "none available (NaN)",
                               super_servers=int(spec.super_servers), qbd_phases=int(e["qbd_phases"]),
                               qbd_relative_error=float(e["qbd_relative_error"]), qbd_tolerance=QBD_RTOL))
    return ds
