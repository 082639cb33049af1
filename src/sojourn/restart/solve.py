"""Product-form solution of a multi-class G-network of PS queues with restart (reference notes §3).

Loads ρ_j of the types j = (queue i, class k, phase p) solve the traffic equations (1)–(4): per type,
out-rate (μ_j + Λ⁻_i α_j) ρ_j equals the inflow of external arrivals, phase feedback, successful restarts
and routed departures. For given signal rates Λ⁻ this is one linear system; when departures become
signals, Λ⁻ depends on ρ (§3.3) and the pair is solved by a damped fixed-point iteration with a
convergence check. With ρ_i = Σ_{j at i} ρ_j < 1 at every queue the stationary law is (5), a
multiclass-PS product form, whence the measures of Property 1 (§3.2).

The single-queue closed form (§3.4): E[S_eff](g) = π₀ (−A_g)⁻¹ 1 with A_g the generator of
service-with-restart per unit of service; E[T] = E[S_eff]/(1 − Λ E[S_eff]); the optimal signal rate g*
minimises E[T] (bounded scalar optimisation after a coarse logarithmic scan).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import lgamma

import numpy as np

from ..core.checks.validate import integer_at_least, nonnegative_finite, positive_finite
from .model import Network


def _summed(index: str, of: str, doc: str) -> property:
    """A measure of :class:`Solution`: its per-type or per-station measure ``of`` summed within each station or
    queue (:meth:`sojourn.restart.model.Network.totals` over ``index``)."""
    return property(lambda self: self.network.totals(index, getattr(self, of)), doc=doc)


@dataclass(frozen=True)
class Solution:
    """Product-form measures of a network (arrays indexed like ``network.layout``)."""

    network: Network
    rho: np.ndarray  # (J,) load of each type (eq. 1, 4)
    signal_rate: np.ndarray  # (N,) total signal rate Λ⁻ at each queue (§3.3)
    iterations: int  # fixed-point iterations (0: linear case)

    queue_load = _summed("type_queue", "rho", "ρ_i = Σ ρ_i^(k,p): utilisation P(N_i > 0) of each queue.")

    @property
    def mean_number(self) -> np.ndarray:
        """E[N_i] = ρ_i/(1 − ρ_i) (Property 1)."""
        r = self.queue_load
        return r / (1.0 - r)

    @property
    def mean_number_type(self) -> np.ndarray:
        """E[N_i^(k,p)] = ρ_i^(k,p)/(1 − ρ_i)."""
        L = self.network.layout
        return self.rho / (1.0 - self.queue_load[L.type_queue])

    mean_number_station = _summed("type_station", "mean_number_type", "E[N_i^(k)] per (queue, class) station.")

    @property
    def arrival_flow(self) -> np.ndarray:
        """Λ_i^(k) of eq. (3): external plus routed arrivals of each station (restarts excluded)."""
        L = self.network.layout
        dep = self.departure_rate
        return L.arrival + dep @ L.routing

    @property
    def restart_flow(self) -> np.ndarray:
        """ν_i^(k) of eq. (2): successful restarts into each station per unit time."""
        L = self.network.layout
        G = self.signal_rate[L.type_queue]
        into_type = (G * L.alpha * self.rho) @ L.restart_move
        return self.network.totals("type_station", into_type)

    @property
    def restart_rate(self) -> float:
        """Successful restarts per unit time in the whole network (signals that hit and succeed)."""
        L = self.network.layout
        return float(np.sum(self.signal_rate[L.type_queue] * L.alpha * self.rho))

    @property
    def departure_rate(self) -> np.ndarray:
        """Service completions per unit time of each station: Σ_p ρ μ H[p, 0]."""
        L = self.network.layout
        return self.network.totals("type_station", self.rho * L.mu * L.exit_prob)

    queue_arrival_flow = _summed("station_queue", "arrival_flow", "Λ_i: the stations' arrival flows within queue i.")

    @property
    def queue_response_time(self) -> np.ndarray:
        """Mean time per visit to queue i: E[N_i]/Λ_i (Little; NaN for a queue nobody visits)."""
        lam = self.queue_arrival_flow
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(lam > 0, self.mean_number / np.where(lam > 0, lam, 1.0), np.nan)

    @property
    def station_time_per_entry(self) -> np.ndarray:
        """Mean time spent per entry into a (queue, class) station, entries by arrival or restart."""
        flow = self.arrival_flow + self.restart_flow
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(flow > 0, self.mean_number_station / np.where(flow > 0, flow, 1.0), np.nan)

    @property
    def response_time(self) -> float:
        """Network mean response time E[T] = Σ_i E[N_i] / Σλ (Little; restarts never remove jobs)."""
        return float(self.mean_number.sum() / self.network.arrival_rate)

    @property
    def throughput(self) -> float:
        """Jobs leaving the network per unit time (= Σλ in steady state)."""
        L = self.network.layout
        return float(np.sum(self.departure_rate * (1.0 - L.routing.sum(axis=1))))

    def probability(self, counts) -> float:
        """π(x) of eq. (5) for a state given as counts per type (all queues)."""
        L = self.network.layout
        x = np.asarray(counts, dtype=np.int64)
        out = 1.0
        for i in range(len(self.network.queues)):
            sel = L.type_queue == i
            xi, ri = x[sel], self.rho[sel]
            n = int(xi.sum())
            logp = np.log1p(-ri.sum()) + lgamma(n + 1)
            for xv, rv in zip(xi, ri, strict=True):
                if xv:
                    logp += xv * np.log(rv) - lgamma(xv + 1)
            out *= float(np.exp(logp))
        return out

    def to_dataset(self):
        """The measures as an ``xarray.Dataset`` (dims queue, station, type) with CF attrs and provenance."""
        import xarray as xr

        from ..core.files.io import provenance

        net = self.network
        L = net.layout
        qn = [q.name for q in net.queues]
        one = "1"
        ds = xr.Dataset(
            {
                "rho": _var("type", self.rho, "load rho_i^(k,p) of (queue, class, phase) (eqs. 1-4)", one),
                "mean_number_type": _var("type", self.mean_number_type, "mean number of jobs in (queue, class, phase)",
                                         one),
                "mean_number_station": _var("station", self.mean_number_station,
                                            "mean number of jobs of (queue, class)", one),
                "arrival_flow": _var("station", self.arrival_flow,
                                     "external + routed arrival rate of (queue, class) (eq. 3)", "1/time"),
                "restart_flow": _var("station", self.restart_flow,
                                     "successful restarts into (queue, class) per unit time (eq. 2)", "1/time"),
                "time_per_entry": _var("station", self.station_time_per_entry,
                                       "mean time per entry into (queue, class), by arrival or restart", "time"),
                "utilisation": _var("queue", self.queue_load, "utilisation P(N_i > 0) = sum of loads", one),
                "mean_number": _var("queue", self.mean_number, "mean number of jobs at the queue", one),
                "queue_response_time": _var("queue", self.queue_response_time,
                                            "mean response time per visit to the queue", "time"),
                "signal_rate": _var("queue", self.signal_rate,
                                    "total restart-signal rate at the queue (external + departures)", "1/time"),
                "response_time": _var((), self.response_time, "network mean response time E[T]", "time"),
                "restart_rate": _var((), self.restart_rate, "successful restarts per unit time", "1/time"),
            },
            coords={"type": ("type", list(L.labels), {"long_name": "queue/class/phase"}),
                    "station": ("station", list(L.station_labels), {"long_name": "queue/class"}),
                    "queue": ("queue", qn, {"long_name": "queue"})},
        )
        ds.attrs.update(provenance(net.to_dict(), title=f"Product-form measures of {net.name}", model=net.describe(),
                                   spec=net.to_json(), fixed_point_iterations=int(self.iterations)))
        return ds


def _var(dims, values, long_name: str, units: str) -> tuple:
    """A data variable with its CF attributes."""
    return dims, values, {"long_name": long_name, "units": units}


def _linear_loads(net: Network, G: np.ndarray) -> np.ndarray:
    """ρ for given signal rates G (N,): (diag(d) − Fᵀ) ρ = λ (eqs. 1–4 as one linear system, notes §8)."""
    L = net.layout
    g = G[L.type_queue]
    resolved = g * L.alpha <= L.mu / np.finfo(float).eps  # else mu + g alpha == g alpha: mu lost to round-off
    if not np.all(resolved):
        j = int(np.argmin(resolved))
        q = net.queues[int(L.type_queue[j])]
        raise ValueError(f"queues[{q.name}].signal_rate {G[L.type_queue[j]]:g} is more than 2^52 times the service "
                         f"rate {L.mu[j]:g} of {L.labels[j]} (restart success {L.alpha[j]:g}): the service rate is "
                         "lost to round-off in the traffic equations (eqs. 1-4), which cannot be solved; the load "
                         "grows with the signal rate, so a network this far out is unstable")
    d = L.mu + g * L.alpha
    F = (L.mu[:, None] * L.phase_move + (g * L.alpha)[:, None] * L.restart_move
         + (L.mu * L.exit_prob)[:, None] * (L.routing[L.type_station] @ L.entry))
    lam = L.arrival @ L.entry
    M = np.diag(d) - F.T
    try:
        rho = np.linalg.solve(M, lam)
    except np.linalg.LinAlgError:
        rho = np.full(lam.shape, np.nan)
    if not np.all(np.isfinite(rho)) or np.any(rho < -1e-12 * max(1.0, np.abs(rho).max(initial=0))):
        raise ValueError("routing: the traffic equations have no non-negative solution; some jobs never leave the "
                         "network (a routing cycle without exit)")
    return np.maximum(rho, 0.0)


def _departure_signals(net: Network, rho: np.ndarray) -> np.ndarray:
    L = net.layout
    return (rho * L.mu * L.exit_prob) @ L.signal_routing[L.type_station]


def solve(net: Network, *, tol: float = 1e-14, max_iterations: int = 10_000, damping: float = 1.0,
          require_stable: bool = True, signal_ext=None) -> Solution:
    """Loads of every (queue, class, phase) and the signal rates; ValueError if unstable or not converged.

    Linear case (signals external only): one solve. Otherwise the fixed point Λ⁻ = λ⁻ + (departures
    that become signals)(ρ(Λ⁻)) by iteration from Λ⁻ = λ⁻ with damping ω (Λ⁻ ← (1−ω)Λ⁻ + ω F(Λ⁻)),
    halved whenever the change stops shrinking, until max |ΔΛ⁻| ≤ tol·(1 + |Λ⁻|).
    ``signal_ext`` (N,) overrides the external signal rates of the model (fast path of the optimiser).
    """
    if not isinstance(net, Network):
        raise ValueError(f"net must be a sojourn.restart.model.Network; got {type(net).__name__}")
    tol = positive_finite("tol", tol)
    max_iterations = integer_at_least("max_iterations", max_iterations, 1)
    damping = positive_finite("damping", damping)
    if damping > 1:
        raise ValueError(f"damping must be in (0, 1]; got {damping!r}")
    L = net.layout
    ext = L.signal_ext if signal_ext is None else np.asarray(signal_ext, dtype=float)
    G = ext.copy()
    rho = _linear_loads(net, G)
    it = 0
    if net.has_departure_signals:
        omega = damping
        last = np.inf
        for it in range(1, max_iterations + 1):  # noqa: B007 (it counts the iterations, read after the loop)
            new = ext + _departure_signals(net, rho)
            step = float(np.max(np.abs(new - G)))
            G = (1.0 - omega) * G + omega * new
            rho = _linear_loads(net, G)
            if step <= tol * (1.0 + float(np.max(np.abs(G)))):
                break
            if step > 0.9 * last:
                omega = max(omega * 0.5, 1e-3)
            last = step
        else:
            raise ValueError(f"max_iterations: the signal fixed point (departures that become signals) did not "
                             f"converge in max_iterations={max_iterations} (last change {step:.3g}, tol {tol:g}); "
                             f"no stable solution found")
        resid = float(np.max(np.abs(ext + _departure_signals(net, rho) - G)))
        if resid > 1e3 * tol * (1.0 + float(np.max(np.abs(G)))):
            raise ValueError(f"max_iterations: the signal fixed point has residual {resid:.3g} after {it} "
                             f"iterations; no stable solution found")
    sol = Solution(net, rho, G, it)
    if require_stable:
        load = sol.queue_load
        for i, q in enumerate(net.queues):
            if not load[i] < 1.0:
                raise ValueError(f"queues[{q.name}]: unstable, load sum of rho = {load[i]:.6g} >= 1 "
                                 f"(the product form needs sum of rho < 1 at every queue)")
    return sol


# -- single queue: the closed form and the optimal signal rate -------------------------------------------
def _single_queue(net: Network) -> None:
    if len(net.queues) != 1:
        raise ValueError(f"queues: the closed form E[S_eff](g) is for a single queue; got {len(net.queues)}")
    if net.has_departure_signals:
        raise ValueError("signals: the closed form E[S_eff](g) needs external signals only")


def effective_service(net: Network, g: float, *, per_class: bool = False):
    """E[S_eff](g) = π₀ (−A_g)⁻¹ 1 of a single queue at signal rate g (notes §3.4).

    A_g = −diag(μ + gα) + [μ H + gα R_restart + μ h₀ P_feedback] is the generator of one job's
    service with restarts, per unit of service (under PS every rate of a job is scaled by 1/n alike);
    π₀ the type law of an arriving job. ``per_class``: the vector over classes of E[S_eff | arrives in k].
    """
    _single_queue(net)
    g = nonnegative_finite("signal_rate", g)
    L = net.layout
    gv = np.full(len(L.mu), g)
    A = -np.diag(L.mu + gv * L.alpha) + (L.mu[:, None] * L.phase_move + (gv * L.alpha)[:, None] * L.restart_move
                                         + (L.mu * L.exit_prob)[:, None] * (L.routing[L.type_station] @ L.entry))
    try:
        w = np.linalg.solve(-A, np.ones(len(L.mu)))
    except np.linalg.LinAlgError:
        raise ValueError("routing: a job can never leave (feedback without exit)") from None
    if per_class:
        return L.entry @ w
    pi0 = (L.arrival @ L.entry) / L.arrival.sum()
    return float(pi0 @ w)


def closed_form(net: Network, g: float) -> dict:
    """Single queue at signal rate g: E[S_eff], ρ = Λ E[S_eff], E[N] = ρ/(1−ρ), E[T] = E[S_eff]/(1−ρ)."""
    s = effective_service(net, g)
    lam = net.arrival_rate
    rho = lam * s
    if not rho < 1:
        return {"effective_service": s, "rho": rho, "mean_number": np.inf, "response_time": np.inf}
    return {"effective_service": s, "rho": rho, "mean_number": rho / (1 - rho), "response_time": s / (1 - rho)}


@dataclass(frozen=True)
class Optimum:
    signal_rate: float  # g*
    response_time: float  # E[T](g*)
    mean_number: float  # E[N](g*) summed over queues
    response_time_without: float  # E[T](0) (inf if unstable without restarts)
    bounds: tuple
    queue: str


def response_time_at(net: Network, g: float, queue=None) -> float:
    """Network mean response time with the external signal rate of ``queue`` set to g (inf if unstable)."""
    qi = net.queue_index(queue)
    ext = net.layout.signal_ext.copy()
    ext[qi] = nonnegative_finite("signal_rate", g)
    try:
        return solve(net, signal_ext=ext).response_time
    except ValueError as exc:
        if "unstable" in str(exc):
            return np.inf
        raise


def optimal_signal_rate(net: Network, queue=None, bounds=(0.0, 100.0), scan_points: int = 81,
                        xtol: float = 1e-10) -> Optimum:
    """g* = argmin over [lo, hi] of the network mean response time as a function of the external signal
    rate of ``queue`` (for one queue: of E[S_eff](g), which does not depend on λ while stable).

    A scan of ``scan_points`` rates (g = lo and a logarithmic grid up to hi) brackets the minimum; then
    ``scipy.optimize.minimize_scalar(method='bounded')`` on log g between the neighbours of the best
    scan point. A bounds end is returned when the minimum lies there.
    """
    from scipy.optimize import minimize_scalar

    lo = nonnegative_finite("bounds[0]", bounds[0])
    hi = positive_finite("bounds[1]", bounds[1])
    if not hi > lo:
        raise ValueError(f"bounds must be (lo, hi) with 0 <= lo < hi; got {bounds!r}")
    scan_points = integer_at_least("scan_points", scan_points, 5)
    qi = net.queue_index(queue)
    qname = net.queues[qi].name
    # the log grid starts at lo, or from 0 a millionth of the network's own rate scale (1/E[T] without
    # restarts) or of hi, whichever is lower: from hi·1e-6 alone, bounds (0, 1e300) scanned only g ≥ 1e294 and
    # answered g* = 0 for example 1 (g* = 0.83); at least 8 points per decade, at most 400 in all
    without = response_time_at(net, 0.0, qi)
    scale = 1.0 / without if np.isfinite(without) and without > 0 else 1.0
    start = lo if lo > 0 else min(hi * 1e-6, scale * 1e-6)
    points = int(min(max(scan_points, 8 * np.log10(hi / start)), max(scan_points, 400)))
    grid = np.geomspace(start, hi, points - (1 if lo == 0 else 0))
    if lo == 0:
        grid = np.concatenate([[0.0], grid])
    vals = np.array([response_time_at(net, g, qi) for g in grid])
    if not np.isfinite(vals).any():
        raise ValueError(f"bounds: the network is unstable for every signal rate in [{lo:g}, {hi:g}]")
    b = int(np.nanargmin(vals))
    a_, c_ = grid[max(b - 1, 0)], grid[min(b + 1, len(grid) - 1)]
    best_g, best_v = float(grid[b]), float(vals[b])
    if c_ > a_ and c_ > 0:
        la = np.log(max(a_, start * 1e-3))
        res = minimize_scalar(lambda x: response_time_at(net, float(np.exp(x)), qi), bounds=(la, np.log(c_)),
                              method="bounded", options={"xatol": xtol})
        if res.fun <= best_v:
            best_g, best_v = float(np.exp(res.x)), float(res.fun)
    sol = solve(net.with_signal_rate(best_g, qi))
    return Optimum(signal_rate=best_g, response_time=best_v, mean_number=float(sol.mean_number.sum()),
                   response_time_without=without, bounds=(lo, hi), queue=qname)
