"""The search of ``sojourn plan`` (:mod:`sojourn.jsq_ps.plan`, "How R is found"): screening, the method per R,
staged simulation, the bracket and its bisection, and ``--confirm``."""
from __future__ import annotations

import math
import multiprocessing
import time

from ...core.checks.units import format_time
from ...core.runs.threads import available_cores
from .evaluation import (
    Engine,
    Evaluation,
    NoServers,
    Simulated,
    _clopper_pearson,
    _interp_percentile,
    fork_pool,
    simulate_counts,
)
from .request import (
    EXACT_MAX_LOAD,
    EXACT_MAX_T,
    EXACT_SECONDS,
    FIRST_STAGE,
    SCREEN_METHOD,
    SIMULATION,
    TAIL_LAW_METHOD,
    TAIL_LAW_SECONDS,
    TAIL_METHOD,
    TAIL_REACH,
    TAIL_SECONDS,
    Request,
    _pct,
    run_length,
    run_model,
)

#: the method of a row decided by a bound, without computing a sojourn-time law (:meth:`Planner.bound`)
BOUND_METHOD = "bound"
BOUND_REASON = (
    "a bound, no method needed: P(T ≤ d) ≥ P(S ≤ d) − P(an arrival finds a customer) − P(another arrives "
    "within d), and Markov's P(T > d) ≤ E[T]/d, with E[N] ≤ a/(1 − ρ) and E[T] ≤ E[S]/(1 − ρ) (JSQ keeps no "
    "more customers than random routing's M/M/1-PS servers with exponential service)"
)

#: the row's reason where T decides
TAIL_REASON = ("T, the tagged-customer chain on a spread-capped state space (sojourn.jsq_ps.solve.tail): "
               "conservative, its percentile an upper bound of the true one within its stated margin; exact does "
               "not run within the planner's budget here")


#: the row's reason where T with the service law decides
TAIL_LAW_REASON = ("T with the service law itself (sojourn.jsq_ps.solve.tail_ph): the tagged customer's own size in a "
                   "phase-type representation of the law, the other customers' departures exponential beyond those "
                   "tracked; its error is its model's, measured against long simulations")


def tail_error(margin: float) -> tuple:
    """T's stated bound at the asked level as a relative error x_T/x_true − 1 (mean, low, high): the true
    percentile lies in [x_D·(1 − m), x_T] with x_T = x_D·(1 + m) (:mod:`sojourn.jsq_ps.solve.tail`), so the
    error is in [0, (1 + m)/(1 − m) − 1]; the margin m itself is the "mean" (T against its finer cap)."""
    if not (math.isfinite(margin) and 0.0 <= margin < 1.0):
        return (math.nan, math.nan, math.nan)
    return (margin, 0.0, (1.0 + margin) / (1.0 - margin) - 1.0)


class Planner:
    """The search of the module doc for one :class:`Request`, with every evaluation cached per R."""

    def __init__(self, request: Request, table=None, workers: int | None = None):
        self.q = request
        self.p = request.reliability
        self._table = table
        self.workers = available_cores() if workers is None else int(workers)
        self.screened: dict = {}
        self.evaluated: dict = {}
        self.simulated: dict = {}
        self._runs: dict = {}  # R -> its replications so far (:meth:`_extend`)
        self._pool = None  # the forked workers, made at the first simulation, kept until :meth:`close`
        self.notes: list = []

    # the accuracy table, read on first need (~0.1 s: one (R, percentile) group of rows is parsed per query)
    @property
    def table(self):
        if self._table is None:
            from ..accuracy import read_accuracy

            self._table = read_accuracy(self.q.accuracy)
        return self._table

    def rho(self, R: int) -> float:
        return self.q.offered / R

    # -- analytic CDFs on a grid through d -----------------------------------------------------------
    def _grid(self, t_hi: float, per_d: int | None = None):
        import numpy as np

        d = self.q.d
        k = per_d or int(min(500, max(16, math.floor(2000 * d / t_hi))))
        h = d / k
        n = int(math.ceil(t_hi / h))
        t = np.arange(n + 1) * h
        t[k] = d
        return t, k

    def _cdf(self, method: str, R: int, t):
        """(F on ``t``, guard flags, details) of ``method`` at R servers (:mod:`sojourn.jsq_ps.solve.guards`: 0 = a
        sojourn-time law of a JSQ system, its truncation reached). ``exact`` raises ``ExactOverBudget`` beyond
        :data:`EXACT_SECONDS`; T runs within :data:`TAIL_SECONDS` (its caps D − 1, D; D = 2 at least) and its
        details are its margin at the asked level (``margin``, :func:`sojourn.jsq_ps.solve.tail.margin_at`) and
        its caps (``D``, ``M``, ``states``)."""
        import numpy as np

        from ..solve.guards import truncation_flags, validity

        a = self.q.offered
        details = {}
        if method == "exact":
            from ..solve.exact import exact_sojourn_cdf

            r = exact_sojourn_cdf(a, 1.0, R, t, max_seconds=EXACT_SECONDS)
            details = {"cdf_low": r.cdf_lower, "cdf_high": r.cdf_upper}  # its certified bounds
        elif method == TAIL_METHOD:
            from ..solve.tail import lower_survival, margin_at, tail_sojourn

            r = tail_sojourn(a, 1.0, R, t, max_seconds=TAIL_SECONDS)
            details = {"margin": margin_at(t, r, self.p), "D": r.D, "M": r.M, "states": r.n_states,
                       "sf_low": lower_survival(r)}
        elif method == TAIL_LAW_METHOD:
            from ..solve.tail import margin_at
            from ..solve.tail_ph import tail_ph_sojourn

            r = tail_ph_sojourn(a, self.q.law, R, t, max_seconds=TAIL_LAW_SECONDS)
            details = {"margin": margin_at(t, r, self.p), "D": r.D, "M": r.M, "states": r.n_states,
                       "h": r.info["h"], "cstar": r.info["cstar"]}
        else:
            from ..solve.methods import Cell

            r = Cell(a, 1.0, R, t).run(method)
        F = np.asarray(r.cdf, dtype=float)
        return F, int(validity(F, r.lambda_n, r.A_n, a, R, a / R)[0]) | truncation_flags(r.info), details

    def bound(self, R: int):
        """(a certified lower bound of P(T ≤ d), an upper bound of the percentile) at R, exponential service only
        (:data:`BOUND_REASON`): the light-load bound 1 − e^(−d) − a/(1 − ρ) − a·d (time in mean service times,
        a the offered load) and Markov's 1 − 1/((1 − ρ) d). Where it reaches the reliability, R meets without any
        method: the extremes (an arrival rate of 1e-300/s, a deadline of hours at millisecond service) are decided
        here, where the methods' grids and chains lose their digits or their time. None where it does not apply."""
        q, p = self.q, self.p
        rho = self.rho(R)
        if not q.exponential or not rho < 1.0:
            return None
        a, d = q.offered, q.d
        tail = min(math.exp(-d) + a / (1.0 - rho) + a * d, 1.0 / ((1.0 - rho) * d))  # ≥ P(T > d)
        low = 1.0 - tail
        if not low >= p:
            return None
        x = 1.0 / ((1.0 - rho) * (1.0 - p))  # Markov's percentile
        slack = 1.0 - p - a / (1.0 - rho) - a * d  # light load: P(S > x) ≤ slack suffices for x ≤ d
        if slack > 0:
            x = min(x, -math.log(slack))
        return low, min(x, d), tail

    def screen(self, R: int):
        """(P(T ≤ d), percentile) by the screening method (M/M/R whatever the law: a starting point; a result
        the guards reject counts as not meeting, so that the search starts higher and walks down); a bound
        (:meth:`bound`) where one decides."""
        b = self.bound(R)
        if b is not None:
            return b[:2]
        if R not in self.screened:
            t_hi = 4.0 * self.q.d
            for _ in range(6):
                t, k = self._grid(t_hi, per_d=100)
                F, flags, _ = self._cdf(SCREEN_METHOD, R, t)
                x = _interp_percentile(t, F, self.p)
                if math.isfinite(x) or flags:
                    break
                t_hi *= 4.0
            self.screened[R] = (0.0, math.inf) if flags else (float(F[k]), x)
        return self.screened[R]

    # -- which method for which R ----------------------------------------------------------------------
    def exact_fits(self, R: int, t_hi: float) -> bool:
        rho = self.rho(R)
        limit = EXACT_MAX_LOAD.get(R)
        return limit is not None and rho <= limit + 1e-12 and (R <= 2 or t_hi <= EXACT_MAX_T)

    def engine(self, R: int, t_hi: float) -> Engine:
        q = self.q
        if not q.exponential:
            return Engine(TAIL_LAW_METHOD, TAIL_LAW_REASON, short=f"T with the {q.law.name} law")
        if self.exact_fits(R, t_hi):
            # exact is the reference: its error is its computed truncation bound, never its distance to a noisy
            # simulation (which the accuracy table measures; sojourn.core.estimates.reference)
            return Engine("exact", "the exact tagged-customer chain runs within the planner's budget here",
                          short="exact chain")
        return self.tail_engine(R)

    def tail_engine(self, R: int) -> Engine:
        """T at R (module doc, step 2): its error, the stated margin, is set once it has run (:meth:`evaluate`)."""
        return Engine(TAIL_METHOD, TAIL_REASON, short="T (conservative)")

    def table_engine(self, R: int) -> Engine:
        """The accuracy table's choice at R where T failed (module doc, step 2): neither exact (a question of cost)
        nor T (it has just failed here) is a candidate."""
        c = self.table.choose(R, self.rho(R), self.p, exclude=("exact", TAIL_METHOD))
        info = None if c.table_R is None else {"table_R": c.table_R, "table_rho": c.table_rho,
                                               "table_percentile": c.table_percentile, "extrapolated": c.extrapolated}
        if c.simulate:
            return Engine(SIMULATION, c.reason, table=info, short=c.short)
        return Engine(c.method, c.reason, c.error, info, c.short)

    def _table_error(self, R, method):
        try:
            return self.table.error(R, self.rho(R), self.p, method)
        except ValueError:
            return (math.nan,) * 3 + (None, None, None, [])

    # -- evaluation with the chosen method ---------------------------------------------------------------
    def evaluate(self, R: int) -> Evaluation:
        if R in self.evaluated:
            return self.evaluated[R]
        import numpy as np

        from ..solve.budget import ExactOverBudget
        from ..solve.guards import describe

        t0 = time.perf_counter()
        b = self.bound(R)
        if b is not None:
            ev = Evaluation(R, self.rho(R), Engine(BOUND_METHOD, BOUND_REASON, short="bound", details={"tail": b[2]}),
                            b[0], b[1], probability_high=1.0, probability_low=b[0])
            return self._keep(R, ev, t0)
        guess = self.screen(R)[1]
        t_hi = max(2.0 * self.q.d, 1.5 * guess if math.isfinite(guess) else 8.0 * self.q.d)
        eng = self.engine(R, t_hi)
        tries = 0
        while eng.method != SIMULATION and tries < 3:  # the grid ends past the percentile, or it is "beyond"
            law = eng.method == TAIL_LAW_METHOD
            tail = eng.method in (TAIL_METHOD, TAIL_LAW_METHOD)  # T's grid: to TAIL_REACH deadlines, once
            t, k = self._grid(TAIL_REACH * self.q.d if tail else t_hi)
            try:
                F, flags, details = self._cdf(eng.method, R, t)
            except ExactOverBudget as exc:  # the exact module's own prediction (a safety net for long grids)
                self.notes.append(f"R = {R}: exact over the planner's budget ({exc}); T decides")
                eng = self.tail_engine(R)
                continue
            except (ArithmeticError, ValueError, MemoryError, RuntimeError, np.linalg.LinAlgError) as exc:
                # RuntimeError: scipy's sparse LU, "Factor is exactly singular" (a chain at R ≈ 50: the previous
                # release stopped there with the error)
                why = f"{eng.method} failed at R = {R} (ρ = {self.rho(R):.4g}): {exc}"
                eng, final = self._instead(R, eng, why, law, "failed")
                if final:
                    break
                continue
            if flags:  # sojourn.jsq_ps.solve.guards: not a sojourn-time law of a JSQ system here
                why = (f"{eng.method}'s result fails the analytic guards at R = {R} (ρ = {self.rho(R):.4g}): "
                       f"{describe(flags)}")
                eng, final = self._instead(R, eng, why, law, "invalid here")
                if final:
                    break
                continue
            high = low = math.nan
            if eng.method == "exact":  # the true P(T ≤ d) lies within its certified bounds (solve.exact)
                low, high = float(details.pop("cdf_low")[k]), float(details.pop("cdf_high")[k])
            if law:  # its error: its model's, measured (the margin of its numerical steps is inside)
                from ..solve.tail_ph import model_error

                eng = Engine(TAIL_LAW_METHOD, eng.reason, model_error(self.q.law), None, eng.short, details)
            elif tail:  # its error: the margin it states at p; the largest P(T ≤ d) its allowance admits
                high = 1.0 - float(details.pop("sf_low")[k])
                eng = Engine(TAIL_METHOD, eng.reason, tail_error(details["margin"]), None, eng.short, details)
            x = _interp_percentile(t, F, self.p)
            if math.isfinite(x) or tries == 2 or tail:
                ev = Evaluation(
                    R,
                    self.rho(R),
                    eng,
                    float(F[k]),
                    x,
                    float(t[-1]) if not math.isfinite(x) else math.nan,
                    probability_high=high,
                    probability_low=low,
                )
                return self._keep(R, ev, t0)
            t_hi *= 4.0
            tries += 1
        if R not in self._runs:  # the analytic methods could not answer: this simulation's cost, admitted now
            from ...core.checks.guard import admit_parts
            from .request import simulation_cost

            admit_parts(simulation_cost(self.q, R, 1))
        sim = self.simulate(R)
        ev = Evaluation(R, self.rho(R), eng, sim.probability, sim.percentile,
                        sim.t_max if not math.isfinite(sim.percentile) else math.nan, sim)
        return self._keep(R, ev, t0)

    def _keep(self, R: int, ev: Evaluation, t0: float) -> Evaluation:
        """The evaluation of R, timed from t0, remembered."""
        ev.seconds = time.perf_counter() - t0
        self.evaluated[R] = ev
        return ev

    def _instead(self, R: int, eng: Engine, why: str, law: bool, what: str):
        """(the engine after ``eng`` failed at R, True if it is final): simulation after T with the law (the accuracy
        table's methods model M/M/R), the accuracy table's choice after T, else simulation."""
        if law:
            self.notes.append(f"R = {R}: {why}; simulated")
            return Engine(SIMULATION, why, short=f"T-law {what}"), True
        if eng.method == TAIL_METHOD:
            self.notes.append(f"R = {R}: {why}; the accuracy table decides")
            return self.table_engine(R), False
        return Engine(SIMULATION, why, table=eng.table, short=f"{eng.method} {what}"), True

    # -- simulation ----------------------------------------------------------------------------------------
    def simulate(self, R: int, full: bool = False) -> Simulated:
        """R simulated: replications in stages (:data:`FIRST_STAGE`, then doubling, capped at the request's
        ``replications``) until the verdict is clear (:meth:`Simulated.verdict`), or all of them with ``full``
        (``--confirm``). Replication k is the same whatever the stage that ran it."""
        cap = self.q.replications
        have = self._runs[R]["done"] if R in self._runs else 0
        want = cap if full else max(have, min(FIRST_STAGE, cap))
        while True:
            if want > have:
                self._extend(R, want)
                self.simulated.pop(R, None)
            if R not in self.simulated:
                self.simulated[R] = self._summary(R)
            sim = self.simulated[R]
            n = sim.replications
            if n >= cap or not sim.verdict(self.p).endswith("within_noise"):
                return sim
            have, want = n, min(cap, 2 * n)

    def _extend(self, R: int, replications: int) -> None:
        """Replications up to ``replications`` − 1 of R (the run length and histogram fixed at R's first stage)."""
        import numpy as np

        from ..model import JSQPS

        q, d = self.q, self.q.d
        if R not in self._runs:
            rho = self.rho(R)
            run = run_length(R, rho, self.p, q.law.scv)
            if run["guard_lengthened"]:
                self.notes.append(
                    f"the simulation of R = {R} (load {rho:.4g}) records {run['window']:.3g} mean service "
                    "times per replication, more than its 100 customers beyond the percentile need: "
                    "the run-length guard's minimum (sojourn.core.estimates.runlength)"
                )
            per_d = 1000  # histogram bins per deadline: d is an edge, the percentile within d/1000
            dt = d / per_d
            guess = self.screen(R)[1]
            if R in self.evaluated and math.isfinite(self.evaluated[R].percentile):
                guess = max(guess, self.evaluated[R].percentile)
            t_hi = max(4.0 * d, 2.0 * guess if math.isfinite(guess) else 8.0 * d)
            bins = int(min(100 * per_d, math.ceil(t_hi / dt)))
            self._runs[R] = {"run": run, "per_d": per_d, "dt": dt, "t_max": bins * dt, "done": 0, "counts": [],
                             "overflows": [], "t": None, "wall": 0.0,
                             "spec": JSQPS.from_rho(R, rho, mu=1.0, service=q.law)}
        r = self._runs[R]
        first = r["done"]
        if replications <= first:
            return
        t0 = time.perf_counter()
        n = replications - first
        fork = self.workers > 1 and n > 1 and "fork" in multiprocessing.get_all_start_methods()
        if fork and self._pool is None:
            self._pool = fork_pool(self.workers, r["spec"], q.seed, r["dt"], r["t_max"])
        count, overflow, t = simulate_counts(r["spec"], n, q.seed, r["run"]["horizon"], r["run"]["warmup"], r["dt"],
                                             r["t_max"], self.workers, first=first, pool=self._pool if fork else None)
        r["wall"] += time.perf_counter() - t0
        r["counts"].append(np.asarray(count))
        r["overflows"].append(np.asarray(overflow))
        r["t"], r["done"] = t, replications

    def _summary(self, R: int) -> Simulated:
        """P(T ≤ d) and the percentile of R's replications so far, with their 95 % intervals."""
        import numpy as np

        from ...core.estimates.stats import cdf_from_histogram, histogram_quantile, mean_ci

        r, p = self._runs[R], self.p
        count, overflow = np.concatenate(r["counts"]), np.concatenate(r["overflows"])
        per_d, dt, t = r["per_d"], r["dt"], r["t"]
        total = count.sum(axis=1) + overflow
        prob = count[:, :per_d].sum(axis=1) / total  # P(T < d): d is the left edge of bin per_d
        F = cdf_from_histogram(count, overflow)  # right edges
        x = histogram_quantile(F, t, dt, p)  # per replication, interpolated within its bin; NaN beyond t_max
        pm, ph = mean_ci(prob)
        # the t-interval across replications, widened to the Clopper-Pearson interval of the pooled count
        # beyond d (which ignores the customers' correlation, so it is never the wider one unless the tail
        # is so thin that some replication saw no customer beyond d: zero spread, no t-interval)
        beyond = int(total.sum() - count[:, :per_d].sum())
        b_lo, b_hi = _clopper_pearson(beyond, int(total.sum()))
        p_lo, p_hi = min(pm - ph, 1.0 - b_hi), max(pm + ph, 1.0 - b_lo)
        if np.all(np.isfinite(x)):
            xm, xh = mean_ci(x)
        else:
            xm, xh = math.inf, math.nan
        tail = 1.0 - prob
        g_lo = math.nan
        if np.all(tail > 0):
            gm, gh = mean_ci(np.log(tail))
            g_lo = float(np.exp(gm - gh))
        from ...core.estimates.runlength import assess

        guard = assess(run_model(R, self.rho(R), self.q.law.scv), r["run"]["window"], r["done"])
        return Simulated(r["done"], float(total.mean()), r["run"]["horizon"], r["run"]["warmup"], float(pm),
                         float(p_lo), float(min(1.0, p_hi)), float(xm), float(xm - xh), float(xm + xh),
                         float(r["t_max"]), r["wall"], self.q.seed, g_lo, guard.valid, guard.relative_se)

    def close(self, stop: bool = False) -> None:
        """Shut the worker processes down (if any were started); ``stop``: kill them now, their tasks unwanted
        (an exception, e.g. Ctrl-C, is on its way)."""
        if self._pool is not None:
            self._pool.stop() if stop else self._pool.shutdown()
            self._pool = None

    # -- the search ----------------------------------------------------------------------------------------
    def screened_start(self) -> int:
        """The least R (≥ the least stable, ≤ max_servers) the screening method says meets the target; the
        largest R if none does."""
        lo = self.q.min_stable
        top = self.q.max_servers
        if self.screen(lo)[0] >= self.p:
            return lo
        step, last_fail = 1, lo
        R = lo
        while True:
            R = min(top, last_fail + step)
            if self.screen(R)[0] >= self.p:
                break
            last_fail = R
            if R == top:
                return top
            step *= 2
        hi = R  # meets; last_fail fails
        while hi - last_fail > 1:
            mid = (hi + last_fail) // 2
            if self.screen(mid)[0] >= self.p:
                hi = mid
            else:
                last_fail = mid
        return hi

    def _no_R(self, R: int, ev: Evaluation, via: str):
        q = self.q
        x = ev.percentile
        where = (
            f"the {_pct(self.p)} percentile is {format_time(x * q.mean_service, q.unit)}"
            if math.isfinite(x)
            else f"the {_pct(self.p)} percentile is beyond {format_time(ev.percentile_above * q.mean_service, q.unit)}"
        )
        return NoServers(f"no R ≤ {q.max_servers} meets P(T ≤ {format_time(q.deadline, q.unit)}) ≥ {self.p:g}: at "
                         f"R = {R} (load {ev.rho:.3g}) {where} ({via}, P(T ≤ d) = {ev.probability:.6g}); raise it, or "
                         "relax the deadline or the reliability")

    def search(self) -> int:
        """The least R by the chosen methods (module doc, step 2): from the screened R, down (if R − 1 meets too)
        or up (galloping) to a bracket, bisected; then down while R − 1 meets (each R has its own method, so
        "meets" need not be monotone in R: the answer's R − 1 is always evaluated and fails)."""
        p, lo, top = self.p, self.q.min_stable, self.q.max_servers

        def meets(R):
            return self.evaluate(R).meets(p)

        R = self.screened_start()
        if meets(R):
            if R > lo and meets(R - 1):
                fail, ok = lo - 1, R - 1  # lo − 1 is unstable: it fails
                while ok - fail > 1:
                    mid = (ok + fail) // 2
                    if mid >= lo and meets(mid):
                        ok = mid
                    else:
                        fail = mid
                R = ok
        else:
            fail, step = R, 1
            while True:
                R = min(top, fail + step)
                if meets(R):
                    break
                if R >= top:
                    raise self._no_R(R, self.evaluate(R), self.evaluate(R).engine.method)
                fail, step = R, 2 * step
            ok = R
            while ok - fail > 1:
                mid = (ok + fail) // 2
                if meets(mid):
                    ok = mid
                else:
                    fail = mid
            R = ok
        while R - 1 >= lo and meets(R - 1):
            R -= 1
        return R

    def confirm(self, R: int) -> int:
        """Move R until simulation agrees (module doc, step 3); simulates R − 1, R, R + 1 of the answer."""
        p, lo, top = self.p, self.q.min_stable, self.q.max_servers
        start = R
        while self.simulate(R, full=True).probability < p:
            if R >= top:
                ev = self.evaluate(R)
                s = self.simulated[R]
                ev_sim = Evaluation(R, ev.rho, ev.engine, s.probability, s.percentile, s.t_max)
                raise self._no_R(R, ev_sim, "simulation")
            R += 1
        while R - 1 >= lo and self.simulate(R - 1, full=True).probability >= p:
            R -= 1
        if R > start:
            self.notes.append(f"the methods' answer R = {start} fails in simulation (P(T ≤ d) = "
                              f"{self.simulated[start].probability:.6g} < {p:g}): the answer is raised to R = {R}")
        elif R < start:
            self.notes.append(f"the methods' answer R = {start} was pessimistic: R = {R} meets the target in "
                              f"simulation (P(T ≤ d) = {self.simulated[R].probability:.6g})")
        self.simulate(R + 1, full=True)
        return R
