"""The answer of ``sojourn plan``: :class:`PlanResult` (the least R, the rows of R − 1, R, R + 1, the notes) as a
table, a dict or an xarray Dataset, and :func:`plan`, the Python entry point."""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

from ...core.checks.units import SECONDS, format_time
from .evaluation import NoServers
from .planner import BOUND_METHOD, BOUND_REASON, Planner
from .request import (
    DEFAULT_MAX_SERVERS,
    FIELDS,
    SIMULATION,
    TAIL_CUSTOMERS,
    TAIL_LAW_METHOD,
    TAIL_METHOD,
    Request,
    _pct,
    check_request,
)


# -- the result -------------------------------------------------------------------------------------
def _num(x):
    """A JSON-able float: None for NaN/inf."""
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class PlanResult:
    """The answer of :func:`plan`: ``R`` (the least number of servers), ``status``, the ``rows`` of R − 1, R, R + 1
    (dicts, times in ``unit``), ``notes``; ``dataset`` (an ``xarray.Dataset`` of the rows), ``to_dict()``,
    ``to_json()``, ``table()``."""

    R: int
    status: str  # predicted | simulated | confirmed | within_noise
    message: str
    unit: str
    rows: list
    notes: list
    request: Request
    confirmed: bool
    wall_time: float = 0.0

    # -- views ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        q = self.request
        return {
            "answer": {"R": self.R, "status": self.status, "confirmed": self.confirmed,
                       "message": self.message},
            "target": {"deadline": _num(self._u(q.deadline)), "reliability": q.reliability,
                       "percentile": 100 * q.reliability,
                       "budget": _num(self._u(q.budget)) if q.budget is not None else None,
                       "network_latency": _num(self._u(q.network_latency)) if q.network_latency is not None else None},
            "system": {"arrival_rate_per_second": q.arrival_rate, "mean_service": _num(self._u(q.mean_service)),
                       "service_law": q.service_law, "offered_load": q.offered, "min_stable_servers": q.min_stable,
                       "dispatch": "jsq", "max_servers": q.max_servers, "current_servers": q.current_servers},
            "unit": self.unit,
            "rows": [{k: (_num(v) if isinstance(v, float) else v) for k, v in r.items()} for r in self.rows],
            "notes": list(self.notes),
            "wall_time_seconds": round(self.wall_time, 3),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def _u(self, seconds):
        return None if seconds is None else seconds / SECONDS[self.unit]

    @property
    def dataset(self):
        """The rows as an ``xarray.Dataset`` on an ``R`` dimension (times in ``unit``), answer in attrs."""
        import numpy as np
        import xarray as xr

        rows = self.rows
        R = np.array([r["R"] for r in rows], np.int64)

        def col(key, dtype=float):
            vals = [r.get(key) for r in rows]
            if dtype is float:
                return np.array([np.nan if v is None else float(v) for v in vals])
            if dtype is int:
                return np.array([-1 if v is None else int(v) for v in vals], np.int64)
            return np.array(["" if v is None else str(v) for v in vals], dtype=str)

        u = self.unit
        spec = {
            "rho": ("load Λ E[S] / R", "1", float),
            "stable": ("1 if the load is below 1", "1", int),
            "method": ("how P(T <= d) was obtained: exact, an approximation, or simulation", None, str),
            "method_reason": ("why that method", None, str),
            "probability": ("P(T <= deadline) by the method (simulation: mean over replications)", "1", float),
            "percentile": (f"the {_pct(self.request.reliability)} percentile of the sojourn time by the method "
                           "(NaN: beyond percentile_above)", u, float),
            "percentile_above": ("the percentile lies beyond this time (where percentile is NaN)", u, float),
            "meets": ("1 if probability >= reliability", "1", int),
            "margin": ("does the verdict survive its evidence's uncertainty: clear, within_noise, "
                       "within_method_error, unmeasured", None, str),
            "method_error_mean": ("the method's measured relative percentile error (accuracy table); T: its stated "
                                  "margin at this percentile, x_T / x_D - 1 (sojourn.jsq_ps.solve.tail)", "1", float),
            "method_error_ci_low": ("lower end of its 95% CI; T: 0 (never below the true percentile)", "1", float),
            "method_error_ci_high": ("upper end of its 95% CI; T: the most its percentile may exceed the true one, "
                                     "(1 + margin)/(1 - margin) - 1", "1", float),
            "probability_high": ("T: the largest true P(T <= deadline) its bound admits (a 'fails' is clear when it "
                                 "is below the reliability); exact: its certified upper bound (the truncation's "
                                 "computed error added); NaN for the other methods", "1", float),
            "table_R": ("accuracy-table R the error was read at", "1", float),
            "table_rho": ("accuracy-table load the error was read at", "1", float),
            "simulated_probability": ("simulated P(T <= deadline), mean over replications", "1", float),
            "simulated_probability_ci_low": ("lower end of its 95% t-interval", "1", float),
            "simulated_probability_ci_high": ("upper end of its 95% t-interval", "1", float),
            "simulated_percentile": ("simulated percentile, mean over replications", u, float),
            "simulated_percentile_ci_low": ("lower end of its 95% t-interval", u, float),
            "simulated_percentile_ci_high": ("upper end of its 95% t-interval", u, float),
            "verdict": ("simulation's verdict: meets, fails, meets_within_noise, fails_within_noise", None, str),
            "replications": ("simulated replications (-1: not simulated)", "1", int),
        }
        data = {}
        for key, (long_name, units, dtype) in spec.items():
            attrs = {"long_name": long_name}
            if units is not None:
                attrs["units"] = units
            data[key] = ("R", col(key, dtype), attrs)
        q = self.request
        attrs = {"answer_R": int(self.R), "status": self.status, "message": self.message,
                 "confirmed": int(self.confirmed), "deadline": q.deadline / SECONDS[u], "reliability": q.reliability,
                 "unit": u, "arrival_rate_per_second": q.arrival_rate, "mean_service": q.mean_service / SECONDS[u],
                 "service_law": q.service_law, "min_stable_servers": q.min_stable, "max_servers": q.max_servers,
                 "notes": "\n".join(self.notes)}
        return xr.Dataset(data, coords={"R": ("R", R, {"long_name": "number of servers R"})},
                          attrs=attrs)

    def table(self) -> str:
        """The answer as text (what ``sojourn plan`` prints)."""
        q, u = self.request, self.unit
        pct = _pct(q.reliability)
        out = [self.message, ""]
        tgt = f"P(T ≤ {format_time(q.deadline, u)}) ≥ {q.reliability:g}"
        if q.budget is not None:
            tgt += f"  (budget {format_time(q.budget, u)} − network latency {format_time(q.network_latency, u)})"
        out.append(f"  target  {tgt}")
        out.append(f"  system  {q.texts.get('arrivals', '')}, {q.texts.get('service', '')}, {q.law.name} service, "
                   f"JSQ-PS; offered load {q.offered:.4g} servers, stable from R = {q.min_stable}")
        out.append("")
        head = ["R", "rho", f"{pct} pct", "meets", "method", "method's measured error [95% CI] (table point) or bound"]
        if self.confirmed:
            head[5:5] = [f"simulated {pct} pct (95% CI)", "verdict"]
        lines = [head]
        star = False
        for r in self.rows:
            if not r["stable"]:
                cells = [str(r["R"]), f"{r['rho']:.3f}", "unstable", "no", "-", "load >= 1"]
                if self.confirmed:
                    cells[5:5] = ["-", "-"]
                lines.append(cells)
                continue
            x = r["percentile"]
            xs = f"{x:.4g} {u}" if x is not None and math.isfinite(x) else f"> {r['percentile_above']:.4g} {u}"
            if r["method"] == BOUND_METHOD:  # an upper bound of the percentile, not a value
                xs = f"≤ {x:.4g} {u}"
            if r["method"] == SIMULATION and r.get("simulated_probability") is not None:
                xs = _sim_text(r, u, q.deadline / SECONDS[u] / 1000) + " (sim)"
            err = _error_text(r)
            if r.get("table_extrapolated"):
                star = True
            yes = ("yes" if r["meets"] else "no") + ("" if r.get("margin") == "clear" else "?")
            cells = [str(r["R"]), f"{r['rho']:.3f}", xs, yes, r["method"], err]
            if self.confirmed:
                cells[5:5] = [_sim_text(r, u, q.deadline / SECONDS[u] / 1000), r.get("verdict") or "-"]
            lines.append(cells)
        widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
        for row in lines:
            out.append(
                "  "
                + "  ".join(
                    c.ljust(w) if i >= 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
                ).rstrip()
            )
        if star:
            out.append("  * beyond the accuracy table: its nearest point used (extrapolated)")
        if any(r.get("margin") not in (None, "clear") for r in self.rows):
            out.append("  ? the verdict is within the uncertainty of its evidence (see the notes)")
        if any("(bin)" in c for row in lines for c in row):  # core.estimates.stats.format_with_ci
            out.append(
                "  '± dt (bin)': the CI is narrower than the histogram's bin width dt = d/1000, which then bounds "
                "the error (the percentile interpolates the CDF linearly within its bin)"
            )
        if self.notes:
            out.append("")
            out.extend(f"  - {n}" for n in self.notes)
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"PlanResult(R={self.R}, status={self.status!r}, unit={self.unit!r}, rows={len(self.rows)})"


def _error_text(r: dict) -> str:
    where = ""
    if r.get("table_R") is not None:
        ext = r.get("table_extrapolated") or []
        where = (f" (R = {r['table_R']}{'*' if 'R' in ext else ''}, ρ = {r['table_rho']:g}{'*' if 'rho' in ext else ''}"
                 f", {r['table_percentile']:g}th)")
    if r["method"] == SIMULATION:
        return f"simulated: {r.get('method_short') or r['method_reason']}{where}"
    if r["method"] == BOUND_METHOD:
        return f"none: P(T > d) ≤ {r['bound_tail']:.2g} by a bound"
    if r["method"] == TAIL_LAW_METHOD:  # its model's error, measured against long simulations
        lo, hi = r.get("method_error_ci_low"), r.get("method_error_ci_high")
        return f"{100 * lo:+.1f} to {100 * hi:+.1f} % (its model, measured; tail_ph.MODEL_ERROR)"
    if r["method"] == TAIL_METHOD:  # its own bound, not a measured error
        m, hi = r.get("method_error_mean"), r.get("method_error_ci_high")
        if m is not None and math.isfinite(m):
            return f"+0 to {100 * hi:+.1f} % (never below; margin {100 * m:.2f} %)"
        ph = r.get("probability_high")
        return (f"P(T ≤ d) ≤ {ph:.6g} by its bound" if ph is not None and math.isfinite(ph)
                else "no stated margin here")
    m, lo, hi = r.get("method_error_mean"), r.get("method_error_ci_low"), r.get("method_error_ci_high")
    if m is None or not math.isfinite(m):
        if r["method"] == "exact":
            ph, pr = r.get("probability_high"), r.get("probability")
            if ph is not None and pr is not None and math.isfinite(ph):  # its certified truncation bound
                return f"none: the exact chain (P(T ≤ d) ± {max(ph - pr, 0.0):.0e}, computed)"
            return "none: the exact chain"
        return "not measured" + where
    return f"{100 * m:+.1f} % [{100 * lo:+.1f}, {100 * hi:+.1f}] vs simulation" + where


def _sim_text(r: dict, u: str, resolution: float) -> str:
    """The simulated percentile with no more digits than its CI supports (``core.estimates.stats.format_with_ci``)."""
    if r.get("simulated_probability") is None:
        return "-"
    x = r.get("simulated_percentile")
    if x is None or not math.isfinite(x):
        return f"> {r['simulated_t_max']:.4g} {u}"
    from ...core.estimates.stats import format_with_ci

    lo, hi = r.get("simulated_percentile_ci_low"), r.get("simulated_percentile_ci_high")
    lo, hi = math.nan if lo is None else lo, math.nan if hi is None else hi
    return f"{format_with_ci(x, lo, hi, resolution=resolution)} {u}"


def _row(planner: Planner, R: int, confirmed: bool) -> dict:
    q = planner.q
    k = q.mean_service / SECONDS[q.unit]  # mean service times -> the user's unit
    rho = q.offered / R
    row = {"R": R, "rho": rho, "stable": rho < 1.0}
    if not row["stable"]:
        row.update(method=None, method_reason="unstable", probability=None, percentile=None, percentile_above=None,
                   meets=False)
        return row
    ev = planner.evaluate(R)
    e = ev.engine
    row.update(
        method=e.method,
        method_reason=e.reason,
        method_short=e.short,
        probability=ev.probability,
        percentile=ev.percentile * k if math.isfinite(ev.percentile) else None,
        percentile_above=ev.percentile_above * k if math.isfinite(ev.percentile_above) else None,
        meets=ev.meets(planner.p),
        margin=ev.margin(planner.p, q.d),
        method_error_mean=e.error[0],
        method_error_ci_low=e.error[1],
        method_error_ci_high=e.error[2],
        seconds=ev.seconds,
    )
    if e.method == TAIL_METHOD:
        row.update(probability_high=ev.probability_high, tail_D=(e.details or {}).get("D"),
                   tail_levels=(e.details or {}).get("M"))
    elif e.method == TAIL_LAW_METHOD:
        d = e.details or {}
        row.update(tail_D=d.get("D"), tail_levels=d.get("M"), tail_stage_width=d.get("h"),
                   tail_coresidents=d.get("cstar"), tail_margin=d.get("margin"))
    elif e.method == "exact":
        row.update(probability_high=ev.probability_high)
    elif e.method == BOUND_METHOD:
        row.update(bound_tail=e.details["tail"])
    if e.table:
        row.update(table_R=e.table["table_R"], table_rho=e.table["table_rho"],
                   table_percentile=e.table["table_percentile"], table_extrapolated=list(e.table["extrapolated"]))
    s = planner.simulated.get(R) if (confirmed or e.method == SIMULATION) else None
    if s is not None:
        row.update(simulated_probability=s.probability, simulated_probability_ci_low=s.probability_low,
                   simulated_probability_ci_high=s.probability_high,
                   simulated_percentile=s.percentile * k if math.isfinite(s.percentile) else None,
                   simulated_percentile_ci_low=s.percentile_low * k if math.isfinite(s.percentile_low) else None,
                   simulated_percentile_ci_high=s.percentile_high * k if math.isfinite(s.percentile_high) else None,
                   simulated_t_max=s.t_max * k, verdict=s.verdict(planner.p), replications=s.replications,
                   customers_per_replication=s.customers, simulation_seconds=s.wall_time,
                   simulated_run_valid=s.run_valid, simulated_run_relative_se=s.run_relative_se)
    return row


def _margin_notes(rows: list, confirm: bool) -> list[str]:
    """Notes on the rows whose answer lies within their method's error, or where it is not measured."""
    notes = []
    for r in rows if not confirm else ():  # under --confirm the simulation decides (its notes above)
        m = r.get("margin")
        if m == "within_method_error" and r.get("method") == TAIL_METHOD:
            notes.append(f"R = {r['R']}: T says it fails the target, but T is conservative and its bound admits "
                         f"a true P(T ≤ d) up to {r['probability_high']:.6g}: R = {r['R']} may suffice; "
                         "--confirm settles it by simulation")
        elif m == "within_method_error" and r.get("method") == "exact":
            notes.append(f"R = {r['R']}: the target lies within exact's certified bounds of P(T ≤ d) "
                         f"(± {r['probability_high'] - r['probability']:.1g}): the answer hangs on the last digits; "
                         "--confirm cannot settle it either")
        elif m == "within_method_error":
            notes.append(f"R = {r['R']}: {r['method']} says it {'meets' if r['meets'] else 'fails'} the target, "
                         f"but within {r['method']}'s measured error (the true percentile may lie on the other side of "
                         f"the deadline{'; R = ' + str(r['R']) + ' may suffice' if not r['meets'] else ''}): "
                         "--confirm settles it by simulation")
        elif m == "unmeasured":
            notes.append(f"R = {r['R']}: {r['method']}'s error is not measured at this point of the accuracy "
                         "table; --confirm checks it by simulation")
    return notes


def _simulation_notes(pl: Planner, q, rows: list, confirm: bool) -> list[str]:
    """A note on the simulations behind the rows: which R, how many replications of how many customers."""
    p = q.reliability
    sims = [r["R"] for r in rows if r.get("method") == SIMULATION or (confirm and r["R"] in pl.simulated)]
    if not sims:
        return []
    s = pl.simulated[sims[0]]
    reps = [pl.simulated[r].replications for r in sims]
    staged = "" if confirm or min(reps) == q.replications else (
        " (fewer where the verdict was already clear: --confirm runs all of them)")
    return [f"simulated R = {', '.join(map(str, sims))}: "
            + (f"{reps[0]}" if len(set(reps)) == 1 else "/".join(map(str, reps)))
            + f" replications{staged} of about {s.customers:,.0f} customers each (about {TAIL_CUSTOMERS} "
            f"beyond the {_pct(p)} percentile), seed {s.seed}"]


def _notes(pl: Planner, q, R: int, rows: list, confirm: bool, sim_R, sim_below) -> list[str]:
    """The answer's notes: noise, bounds, T's conservatism, the method errors, the simulations, the table's
    reach and the servers run now."""
    p = q.reliability
    notes = list(pl.notes)
    if sim_R is not None and sim_R.verdict(p) == "meets_within_noise":
        notes.append(f"R = {R} meets the target only within the simulation noise: its 95 % interval of "
                     f"P(T ≤ d) [{sim_R.probability_low:.6g}, {sim_R.probability_high:.6g}] contains {p:g}"
                     + (f"; R = {R + 1} meets it with a margin beyond the noise"
                        if (R + 1) in pl.simulated and pl.simulated[R + 1].verdict(p) == "meets" else ""))
    if sim_below is not None and sim_below.verdict(p) == "fails_within_noise":
        notes.append(f"R = {R - 1} fails only within the simulation noise (95 % interval of P(T ≤ d) "
                     f"[{sim_below.probability_low:.6g}, {sim_below.probability_high:.6g}] contains {p:g}): "
                     f"R = {R - 1} may suffice")
    bound_rows = [r["R"] for r in rows if r.get("method") == BOUND_METHOD]
    if bound_rows:
        notes.append(f"R = {', '.join(map(str, bound_rows))}: by {BOUND_REASON}; its percentile is an upper bound")
    tail_rows = [r["R"] for r in rows if r.get("method") == TAIL_METHOD]
    if tail_rows:
        notes.append(
            f"R = {', '.join(map(str, tail_rows))}: by T (sojourn.jsq_ps.solve.tail), whose percentile is never "
            "below the true one (its P(T ≤ d) never above): a 'yes' from T is safe; its error column states "
            "by how much it may exceed the true percentile (its margin between two spread caps)"
        )
    notes += _margin_notes(rows, confirm)
    if R == q.min_stable:
        notes.append(f"R = {R} is also the least stable number of servers (offered load {q.offered:.4g})")
    if not q.exponential:
        law_rows = [r["R"] for r in rows if r.get("method") == TAIL_LAW_METHOD]
        other = [r["R"] for r in rows if r.get("method") == SIMULATION]
        if law_rows:
            from ..solve.tail_ph import model_error_text

            notes.append(f"R = {', '.join(map(str, law_rows))}: by T with the {q.law.name} law itself "
                         f"(sojourn.jsq_ps.solve.tail_ph, no simulation needed): {model_error_text(q.law)}")
        if other:
            notes.append(f"R = {', '.join(map(str, other))}: simulated, T with the {q.law.name} law could not answer "
                         "there (see the notes above)")
    notes += _simulation_notes(pl, q, rows, confirm)
    if any("R" in (r.get("table_extrapolated") or []) for r in rows):
        notes.append(f"R beyond the accuracy table (largest R = {pl.table.Rs[-1]}): the errors are those measured at "
                     "that R (extrapolated)")
    if q.current_servers is not None:
        diff = R - q.current_servers
        notes.append(f"you run {q.current_servers} servers: "
                     + (f"{diff} more needed" if diff > 0 else "enough" if diff == 0 else f"{-diff} fewer would do"))
    return notes


def plan(arrival_rate=None, mean_service=None, *, deadline=None, reliability=None, service_rate=None, rho=None,
         R=None, service_law="exponential", budget=None, network_latency=None, dispatch="jsq",
         max_servers=DEFAULT_MAX_SERVERS, confirm=False, replications=None, seed=0, unit=None, accuracy=None,
         _names=FIELDS) -> PlanResult:
    """The least number of JSQ-PS servers R with P(T ≤ deadline) ≥ reliability (module doc).

    arrival_rate
        ``"9000/s"``, ``"9/ms"`` or a number per second; or ``rho`` with ``R``: the load at the number
        of servers you run now (Λ = rho · R / E[S]).
    mean_service / service_rate
        ``"1.2ms"`` (or seconds) / ``"833/s"`` (or per second); ``service_law`` a ``sojourn.laws`` string
        (``"lognormal:sigma=0.69"``), rescaled to that mean (default exponential).
    deadline / budget, network_latency
        ``"72ms"`` (or seconds), or a budget and the network latency it must absorb (d = budget − latency).
    reliability
        p in (0, 1) (``0.9999`` or ``"99.99%"``).
    max_servers, dispatch
        The largest R to consider (default 64); only ``"jsq"`` is modelled.
    confirm, replications, seed
        Simulate R − 1, R, R + 1 (``replications`` each, default :func:`replications_for`, seeds from
        ``sojourn.core.laws.seeds`` under ``seed``) and never answer an R that the simulation shows to fail.
    unit
        Unit of the answers (default: the deadline's or budget's).
    accuracy
        An accuracy table (CSV, :mod:`sojourn.jsq_ps.accuracy`) instead of the shipped one.
    """
    t0 = time.perf_counter()
    q = check_request(arrival_rate=arrival_rate, rho=rho, R=R, mean_service=mean_service,
                      service_rate=service_rate, service_law=service_law, deadline=deadline, budget=budget,
                      network_latency=network_latency, reliability=reliability, dispatch=dispatch,
                      max_servers=max_servers, confirm=confirm, replications=replications, seed=seed, unit=unit,
                      accuracy=accuracy, names=_names)
    from ...core.checks.guard import admit_parts
    from .request import plan_cost

    admit_parts(plan_cost(q))  # before any compute: refused above the limits, naming what drives the cost
    pl = Planner(q)
    try:
        try:
            R = pl.search()
            if confirm:
                R = pl.confirm(R)
        except NoServers as exc:
            raise NoServers(f"{_names['max_servers']} {q.max_servers}: {exc}") from None
        rows = [_row(pl, r, confirm) for r in (R - 1, R, R + 1) if r >= 1]
    except BaseException:
        pl.close(stop=True)  # its simulations' worker processes end now (Ctrl-C, an error)
        raise
    pl.close()
    p = q.reliability
    ans = pl.evaluate(R)
    # the simulations that are evidence for the answer: R and R - 1 under --confirm, or where simulation was the
    # method; the answer is "within_noise" when one of their 95 % intervals of P(T <= d) contains p
    evidence = {r: pl.simulated[r] for r in (R - 1, R) if r >= q.min_stable and r in pl.simulated
                and (confirm or pl.evaluate(r).engine.method == SIMULATION)}
    sim_R, sim_below = evidence.get(R), evidence.get(R - 1)
    noisy = any(v.verdict(p).endswith("within_noise") for v in evidence.values())
    status = ("within_noise" if noisy else "confirmed" if confirm else "simulated" if evidence else "predicted")
    d_text = format_time(q.deadline, q.unit)
    how = {"predicted": f"by {ans.engine.method}", "simulated": "by simulation" if ans.engine.method == SIMULATION
           else f"by {ans.engine.method}, R - 1 by simulation",
           "confirmed": "confirmed by simulation", "within_noise": "by simulation, within its noise"}[status]
    message = f"R = {R} servers: the least number with P(T ≤ {d_text}) ≥ {p:g} ({how})"
    notes = _notes(pl, q, R, rows, confirm, sim_R, sim_below)
    res = PlanResult(R, status, message, q.unit, rows, notes, q, bool(confirm))
    res.wall_time = time.perf_counter() - t0
    return res
