"""``sojourn plan``: the least number of servers R with P(T ≤ d) ≥ p for R processor-sharing servers behind
join-the-shortest-queue, and the evidence for it (issue 14).

The question. Poisson arrivals at rate Λ, service requirements of mean E[S] (exponential unless a
``service_law`` is given), a deadline d on the sojourn time T (or a budget minus a network latency), a
reliability p: which is the least R with P(T ≤ d) ≥ p? Time is measured in mean service times inside
(μ = 1, offered load a = Λ·E[S], d/E[S]); answers are printed in the user's units.

Refused before any compute, naming the field (flag): p ∉ (0, 1) (p = 1 is no finite R's: the sojourn time
is unbounded); a deadline the service requirement alone misses, P(S ≤ d) ≤ p (T ≥ S on every path: a PS
server serves at most at rate 1); a load no R ≤ ``max_servers`` keeps stable (R > a is needed); any dispatch
but ``jsq`` (the only one the methods model); malformed times and rates.

How R is found.

1. Screen: the least R ≥ ⌊a⌋ + 1 (the least stable R) whose P(T ≤ d) ≥ p by a cheap method (C*, Gupta's
   λ_n and the birth–death occupancy, no whole-system chain: milliseconds at any R), galloping then
   bisecting on R.
2. Decide with the chosen method for each R (:meth:`Planner.engine`): ``exact`` (the tagged-customer
   chain) where it runs within a small budget (:data:`EXACT_MAX_LOAD`, measured by ``benchmarks/plan.py``);
   else method T (:mod:`sojourn.jsq_ps.solve.tail`: the tagged chain on a spread-capped state space, within
   :data:`TAIL_SECONDS` of CPU, on a grid to :data:`TAIL_REACH` deadlines), which is conservative: its
   P(T ≤ d) is a lower bound of the true one and its percentile an upper bound within its stated margin, so
   its "meets" is safe; its error column is that margin (``margin_at``: the true percentile lies in
   [x_T·(1 − m)/(1 + m), x_T]), and a "fails" is clear only if the largest P(T ≤ d) its bound admits
   (``lower_survival``) is below p. Where T fails (an exception or the analytic guards), the most accurate
   non-optimistic approximation at (R, ρ, p) of the accuracy table (:mod:`sojourn.jsq_ps.accuracy`,
   conservative between rows; exact and T excluded); where every method is optimistic there, the table has
   nothing usable, p is beyond its percentiles, or the service law is not exponential (the methods model
   M/M/R), simulate. From the screened R go down (if R − 1 meets too) or up (galloping) to a bracket and
   bisect it; the answer's R − 1 is always evaluated and fails (each R has its own method, so "meets" need
   not be monotone in R). The table shows R − 1, R, R + 1; a verdict inside its evidence's uncertainty is
   marked (:meth:`Evaluation.margin`: a simulation's 95 % interval of P(T ≤ d) contains p, the method's
   measured error interval could put the true percentile on the other side of d, or T's bound admits a true
   P(T ≤ d) ≥ p where T fails).
3. ``confirm``: simulate R − 1, R, R + 1 (the numba kernel; replication k of each R from
   ``sojourn.core.laws.seeds``, the replications spread over forked processes, one per core) and move R until the
   simulation agrees: the answer is never an R whose simulated P(T ≤ d) is below p, and goes down where the
   method was pessimistic; where a 95 % interval contains p the answer says that the margin is inside the
   simulation noise.

Simulation run length (:func:`run_length`): n = max(⌈100/(1 − p)⌉, 10 000) recorded customers per
replication, so that about 100 of them lie beyond the p-percentile in every replication; warm-up
max(10 τ, 5 % of the recording window) with τ = 1/(R μ (1 − √ρ)²), the relaxation time of the M/M/R
queue (Morse 1955), starting empty. Replications, in stages (:meth:`Planner.simulate`): a decision needs
only to know on which side of p the simulated P(T ≤ d) lies, so :data:`FIRST_STAGE` = 4 replications are run
first (one round on 2 cores), then twice as many, up to :data:`DEFAULT_REPLICATIONS` = 10 (``--replications``),
stopping as soon as the verdict is clear (:meth:`Simulated.verdict`: the 95 % interval of P(T ≤ d) excludes p;
for a failing R also the interval of the geometric mean of the replications' P(T > d), a t-interval on the log
scale, lying above 1 − p). At the first stage t = 3.18 (3 degrees of freedom): a verdict that survives it is
far from p, as most R on the way to the answer are.
``--confirm`` runs all of them for R − 1, R, R + 1; stages only add replications k = n, n + 1, … whose
streams depend on k alone, so a staged R extended to 10 is exactly a 10-replication run. P(T ≤ d) is read
exactly at d (a histogram edge), the percentile to 1/1000 of d.

Python: ``sojourn.plan(arrival_rate="9000/s", mean_service="1.2ms", deadline="72ms", reliability=0.9999)``
→ :class:`PlanResult` (``.R``, ``.rows``, ``.notes``, ``.dataset`` an ``xarray.Dataset``,
``.to_dict()``, ``.table()``); numbers given for times are seconds, for rates per second.
"""
from __future__ import annotations

from ...core.exports import lazy

# imported on first use: ``sojourn plan --help`` imports this package (its cli module) and nothing of the planner
_EXPORTS = {**{name: ".evaluation" for name in ("Engine", "Evaluation", "NoServers", "Simulated", "simulate_counts")},
            "Planner": ".planner",
            **{name: ".request" for name in ("DEFAULT_MAX_SERVERS", "DEFAULT_REPLICATIONS", "EXACT_MAX_LOAD", "FIELDS",
                                             "FIRST_STAGE", "FLAGS", "SIMULATION", "TAIL_METHOD", "TAIL_REACH",
                                             "TAIL_SECONDS", "Request", "check_request", "replications_for",
                                             "run_length", "stable_from")},
            "PlanResult": ".result", "plan": ".result"}

__all__ = [*_EXPORTS]
__getattr__ = lazy(__name__, _EXPORTS)
