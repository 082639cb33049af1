"""Method T for a general service law: the sojourn-time tail of M/G/R-JSQ-PS.

The exponential method T (:mod:`sojourn.jsq_ps.solve.tail`) follows a tagged customer through a Markov chain of
its server and the other servers (spread-capped, throughput-preserving boundary). Here the customers' work is a
general law G (mean 1/μ). Under processor sharing a customer present from 0 to t has received the attained
service C(t) = ∫ 1/k(s) ds, k the occupancy of its server, and it leaves when C reaches its own size X, which is
independent of everything else: P(T > t) = E[Ḡ(C(t))]. So the model is T's chain with three additions.

**1. The tagged customer's own size, exactly in law.** The chain carries the tagged customer's phase of a
phase-type representation PH(α, S) of G, moving at the speed 1/k of its share: own phase i → j at S_ij/k,
completion at s_i/k. For a phase-type law (exponential, Erlang, gamma with an integer shape, hyperexponential, a
given PH) the representation is the law. For any other law it is the stage Coxian of
:func:`sojourn.core.laws.phase_fit.stage_representation` at the stage widths h, h/2, h/4 (relative resolution h: equal
stages up to the upper end of a bounded law or the mean, then growing by 1 + 2h), and the survival is extrapolated
to h → 0 (:func:`sojourn.core.laws.phase_fit.richardson`); the difference between the two- and three-point
extrapolations is the stated error of that step. Why not a moment fit: a PH matched to three moments puts an
exponential tail behind a bounded law and fixes no more of the shape, and the sojourn tail under PS follows the
size's own tail (a job's sojourn is at least its size, and grows with it): measured against simulation, the
three-moment fit of the paper's lognormal (σ = ln 2) is 2–15 % high at the 99.99th percentile where the stage
family extrapolated is within 2 % (``benchmarks/tail_ph_reference.py``); Erlang-20 for the deterministic law is
13–20 % high at R = 1–10, ρ = 0.9 where the extrapolated family is within 1 %. The deterministic law's family is
Erlang-8, -16, -32 (h = 1/32) extrapolated, with its co-residents as Erlang-6 (2.): within the same budget, offering
the planner Erlang-16, -32, -64 too put 49 instead of 47 of its 56 reference percentiles within 5 % but the worst
from +11.6 % to +13.4 % (R = 10, ρ = 0.5: a finer width for a smaller spread cap), and co-residents as Erlang-10
46 of 56, worst +25.1 % (fewer tracked) — so neither is taken (``benchmarks/tail_ph_cells.py --deterministic``).

**2. The co-residents' sizes where few.** The customers sharing the tagged customer's server are T's exponential
customers (departing at μ(k−1)/k in all) once there are more than ``cstar`` of them — many customers under PS
leave nearly as a Poisson stream whatever their law (the superposition of their residual times) — and while there
are at most ``cstar``, each carries its phase of a representation of the law (count vectors over the phases): a
customer found at the server starts in the stationary phase of a customer in service (π_e ∝ α(−S)⁻¹, the
equilibrium residual law; Kelly's symmetric queues, exact for M/G/1-PS), an arrival in α; when the count falls to
``cstar`` from above, the phases are drawn from that law. The co-residents' representation
(:func:`co_representations`): a phase-type law's own; for a law with a bounded support (uniform, triangular,
deterministic) the Coxian of its mean and c² (an Erlang mixture of at most :data:`MAX_CO_PHASES` phases: Erlang-3
for the uniform law, Erlang-6 for the triangular), the same at every width; for any other law the stage family at
:data:`CO_FACTOR` times the tagged customer's widths. Why a two-moment law for the bounded ones: with three phases
instead of a stage family's 16 to 32, the planner tracks four to eight co-residents where it tracked one or two,
and the exponential ones beyond ``cstar`` — the unbounded residual work of a customer whose real residual is at
most the law's upper end — were what kept the method 4–9 % above the simulations at moderate load (uniform, R = 5,
ρ = 0.5, 99.99th: +7.2 % with one co-resident tracked in 32 stages, +2.3 % with four in Erlang-3); the planner
then adds a co-resident before each further spread cap (:func:`_upgrades`). What the two moments do not carry:
the Erlang's exponential tail beyond the upper end and its lighter mass just below it (uniform(0, 2):
P(S > 1.5) = 0.25 against Erlang-3's 0.17) make a co-resident's competition E[min(S, x)] for a long tagged
customer slightly smaller — the method went from conservative to up to 1.6 % below the simulations in a few
low-load cells (uniform, R = 10, ρ = 0.3, 99.99th: 1.2 % below the simulation's 95 % interval; R = 5, ρ = 0.3,
99.9th: 1.1 %), stated in :data:`MODEL_ERROR`.
At R = 1 with ``cstar`` above the level cap this *is*
the M/PH/1-PS sojourn chain of Sericola, Guillemin & Boyer (Queueing Systems 50, 2005), exact; the planner tracks
every co-resident at R = 1 where that fits its budget (a phase-type law of few phases: H2, Erlang-2).

**3. Paths where the tagged server's population never changes, exactly.** A law with a bounded support (uniform,
triangular, deterministic) gives the sojourn time sharp features — the atom T = X of a customer who stays alone,
T = 2X of one who shares with the same customer throughout — that no phase-type law resolves and no extrapolation
in h recovers. They come only from the paths on which nobody joins or leaves the tagged server: then C(t) = t/k,
every co-resident must still be there, and that probability is exact in law:

    P(T > t, no change) = Σ_k a_k(t) Ḡ(t/k) Ḡ_e(t/k)^(k−1),

a_k(t) = P(the arrival finds k − 1 others and no arrival joins them by t) from T's chain without the co-residents'
departures, Ḡ_e the co-residents' equilibrium residual law (:func:`sojourn.core.laws.phase_fit.equilibrium_survival`;
for a bounded law that of their two-moment Coxian (2.), the law the rest of the chain gives them: with the exact
one beside the Coxian elsewhere, the M/G/1-PS mean — insensitive, 1/(1 − ρ) — came out 0.5 % high at ρ = 0.5,
uniform, and the percentiles up to 1.4 % lower at low load; with the same law 0.01 %). The method
replaces the chain's own value of these paths (the same sum with the representation's survivals) by this one and
extrapolates only the rest, which is smooth in t (a mixture over the times of the first change). At R = 3,
ρ = 0.1, uniform service, the 99.99th percentile goes from 32 % low (extrapolating everything) to 1.8 % low.

**What it neglects** (a model error, measured, not bounded): the service law of the co-residents beyond ``cstar``
and of the customers at the other servers, whose departures are T's exponential ones; for a bounded law, the shape
of the co-residents' law beyond its mean and c² (2.) — the occupancy seen by an
arrival and the routing are those of M/M/R-JSQ-PS, which JSQ-PS makes nearly insensitive to the service law
(Gupta, Harchol-Balter, Sigman & Whitt 2007); the phases of co-residents found by an arrival, drawn as in M/G/1-PS.
The more variable the law, the more persistent the real congestion (in heavy traffic its relaxation time grows
with E[S²]), so the neglected part was expected to make the method optimistic for laws more variable than the
exponential; measured (``benchmarks/tail_ph_method.csv`` against ``benchmarks/tail_ph_reference.csv``, summary in
``docs/jsq_ps.md``), the method is mostly above the simulation for every law, lognormal σ = 1 included, and below
it by a few per cent at most in a few cells — its range per class is ``MODEL_ERROR``.

**Where it missed 5 % outside deterministic service** (``benchmarks/tail_ph_cells.py``; both references re-run 6–10
times longer with another seed, inside the first ones' intervals): the budget's resolution, not a missing moment.
Triangular, R = 10, ρ = 0.7, 99.99th: +5.2 % reported with stage width 1/32 (D = 2, two co-residents); the
co-residents' three-moment fit (two Erlang-9, 18 phases) instead of Erlang-6 moved the estimate by 0.01 points; the
finer family down to h = 1/64 (:data:`FINE_FAMILY`), which the planner now takes there, brings it to +3.7 %.
Lognormal σ = ln 2, R = 10, ρ = 0.9, 99.9th: +5.0 % with two widths and no co-resident tracked under the first cost
model's 2.85 s; three widths give +3.0 % (3.3 s predicted), one co-resident tracked with two widths +4.8 % (3.0 s),
both together +3.0 % (6.8 s); with the refitted model ("Cost") ``DEFAULT_SECONDS`` is 3.7 s and the planner, which
adds a co-resident before a width, tracks one: +4.8 % (the figures: ``benchmarks/tail_ph_cells.jsonl``).

**The stated margin** (``margin`` per percentile, as T's): the survival reported is

    S_T = S + |S_D − S_{D−1}| + FLOOR·S   (non-increasing, ≤ 1),

S the extrapolated survival (spread cap D), S_D − S_{D−1} the change from cap D − 1 to D of the finest stage
representation's (not the coarsest's: a coarse representation smears a bounded law's edges, and its change
overstated the margin at R = 10, ρ = 0.5, uniform, 99.99th percentile, 16 % against 2.6 % at the finest, for
0.2 s of CPU less), FLOOR = 1 %
as T's: T's allowance for its numerical truncations (spread cap, level cap, the held tail below ``STOP``). The
extrapolation's own uncertainty — how far the percentile moves between the two- and three-width extrapolations —
is stated beside it (``extrapolation_<p>`` in the result's ``info``), not added: against the long simulations it
overstates the extrapolation's actual error several times (R = 3, ρ = 0.3, uniform, 99.99th percentile: 6.7 %
stated, the three-width estimate 1.4 % above the simulation). Neither covers the model error above, which is
measured (``MODEL_ERROR``). With exponential service the method is T, unchanged.

**Cost.** The stage widths, the spread cap D and ``cstar`` are chosen by predicted CPU seconds (:func:`_plan`,
:class:`_CostModel`), a model of the whole call whose constants are fitted to measured calls
(``benchmarks/tail_ph_cost.py``, 56 calls on the paper's grid, the R = 10, ρ ≥ 0.9 cells of every law among them):
each solve at its own uniformisation rate, computed from the pilot's chain (its exits, the width's fastest phase and
the tracked co-residents' at the share 1/k — the sum λ + Rμ + both, taken before, put it up to 1.6 times too high,
and the steps with it), the environment's moves as counted scaled by the pilot's built/counted ratio (T's moves
between the same two states merge: 0.6–0.8 of those counted), every stage family's finer widths stopping sooner than
the pilot's coarse one (not only a bounded law's: lognormal σ = ln 2 too) unless the pilot ran to the grid's end,
the product vector's outgrowing the cache (timed per solve in a diagnostic run, not recorded: the cost per entry,
phase and step rose 1.8 times in the kernel, 2 times in scipy's product, between 1 and 30 MB), the Python-level
building of the tracked co-residents' count vectors (1 of the 1.5 s at R = 1, ρ = 0.95, gamma, every co-resident
tracked), the pilot's solve and the sub-chains without changes at the tagged server, the Poisson mixing and the
building of T's chains. Per solve of the same calls (``python benchmarks/tail_ph_cost.py --steps``, the record's
``"steps"`` lines): the states exact, the predicted steps 0.85–1.52 times those taken, 0.93–1.13 for 80 % of the 179
solves — the highest where a phase-type law's co-residents are all tracked (R = 1), whose rate the bound above
overstates by up to 1.39 (with the first model's rate the steps had been over-predicted up to 2.4 times).
Measured/predicted over the whole calls lies between 0.72 and 1.54 (the old model's 0.67–1.73 on its 45), within
±20 % for 51 of 56; near the budget (predicted ≥ 0.6 of it) 0.72–1.32. The calls left outside ±20 %: lognormal σ = 1
at R = 10 (1.30–1.32: in the diagnostic run its 33-phase solves cost 0.40–0.45 ns per entry, phase and step where
other laws' of 26–64 phases cost 0.2–0.35 ns), lognormal σ = ln 2 with three widths (1.21), gamma at R = 1, ρ = 0.95
(1.54, 1.5 s: the 369 co-residents' count vectors) and triangular at R = 1 (0.72). Beyond the model, the machine:
the same call took 4.2 and 3.5 s in the calibration (uniform, R = 1, ρ = 0.5, load average 16 and 23 on the 2 cores)
and 4.7 s in the validation (load 9.6); the calibration ran at a load average of 9–28. ``DEFAULT_SECONDS`` is 5 s
over the worst ratio near the budget (``BUDGET_ERROR``, +32 % rounded up to +35 %), 3.7 s. Where even the least
choice (the cheapest family, D = 2, no co-resident tracked) is predicted over the budget — R = 10 at ρ ≥ 0.9 for the
most variable laws — the extrapolation in h is done on the D − 1 chain, which the margin needs anyway and which is
several times smaller (R = 10: 1 544 states against 9 815), and one width's change from D − 1 to D is added to it:
S = R_{D−1} + S_D(h_w) − S_{D−1}(h_w), the margin taken at that width. The width is the finest (then S = S_D(h) + the
extrapolation's correction measured at D − 1; it moved the reported percentiles by +0.1 to +0.8 % where used), or
the coarsest if even that is predicted beyond ``OVER_BUDGET`` times the budget (its margin is larger: the coarse
width smears the law). What it neglects is the extrapolation's change with D, a second-order term.

**Long grids.** The chain's uniformised steps grow as q·t_max, and so does the Poisson mixing of every grid point:
at R = 1, ρ = 0.95, lognormal σ = 1, a grid to 2550 with dt = 0.01 (255 001 points, 24 000 steps) cost 15–19 s of
CPU, of which the stepping was 1.3 s. Two things made it 1.5 s, the results unchanged: the unchanged paths' masses
(3.), one Poisson mixture per occupancy, are mixed only up to where their terms can still reach 10⁻¹⁶
(:func:`_unchanged_horizon`; mass held at the level cap, where nobody can join, had kept them to the grid's end:
12.6 s); and on a long grid the chain's survival is mixed at knots a fraction of the Poisson time's standard
deviation sqrt(t/q) apart and interpolated (:func:`_knot_mix`; within 10⁻⁹ of the full mix on that cell; the
paper's grid, below :data:`KNOT_MIX_TERMS`, is mixed at every point).
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from itertools import combinations_with_replacement

import numpy as np

from ...core.laws import distributions as Dist
from ...core.laws import phase_fit
from ._blas import single_threaded_blas
from .tail import (
    FLOOR,
    LEVEL_EPS,
    MAX_D,
    TAGGED_EXTRA,
    TAGGED_OTHER,
    _levels_for,
    _monotone,
    level_cap,
    per_server_rates,
    system_law,
    tagged_moves,
)
from .uniformization import poisson_cutoff, poisson_mix

#: the product chain's uniformised steps stop once the remaining survival is below this; the survival beyond is
#: held at the last value (an upper bound, off by less than STOP: 0.1 % of the survival at the 99.999th percentile)
STOP = 1e-8
#: default CPU seconds of one cell (the whole call; the stage widths, the spread cap and ``cstar`` are chosen to fit
#: the predicted cost in it): with the cost model's error near the budget (``BUDGET_ERROR``), the measured CPU stays
#: within the 5 s per cell of issue 34 (module doc, "Cost")
DEFAULT_SECONDS = 3.7
#: the cost model's largest relative error (measured/predicted − 1) over the calibration's calls predicted at 0.6
#: times the budget or more (``benchmarks/tail_ph_cost.jsonl``, checked by a test: +32 %, lognormal σ = 1, R = 10,
#: ρ = 0.7; the old model's was +73 %):
#: DEFAULT_SECONDS·(1 + BUDGET_ERROR) ≤ 5 s
BUDGET_ERROR = 0.35
#: the stage families tried, cheapest first (each a sequence of widths, coarsest first, halving): two widths remove the
#: O(h) term, three the O(h²) term too. The coarsest width must be at most 1/4 of the mean (measured: widths (1, 1/2,
#: 1/4) extrapolate a uniform law 34 % high at R = 10, ρ = 0.9, widths (1/4, 1/8, 1/16) 1 % high); a law with a
#: bounded support at low load needs the finest (at R = 3, ρ = 0.3, uniform, the 99.99th percentile was 7.7 % low
#: with (1/4, 1/8, 1/16), 1 % high with (1/8, 1/16, 1/32)); a smooth law at high load is served by two (R = 10,
#: ρ = 0.9, lognormal σ = ln 2: (1/4, 1/8) 28.63, (1/4, 1/8, 1/16) 28.92, a simulation 28.36 ± 0.13)
FAMILIES = ((1 / 4, 1 / 8), (1 / 4, 1 / 8, 1 / 16), (1 / 8, 1 / 16, 1 / 32))
#: the finer family offered after FAMILIES to a bounded law with a density (uniform, triangular), once two
#: co-residents are tracked (:func:`_upgrades`): at triangular, R = 10, ρ = 0.7 it took the 99.99th percentile from
#: +5.2 % to +3.7 % of the long simulation (``benchmarks/tail_ph_cells.py``); not to the deterministic law, whose
#: Erlang-16, -32, -64 left its worst cell further off (module doc, 1.)
FINE_FAMILY = (1 / 16, 1 / 32, 1 / 64)
#: how far beyond ``max_seconds`` the predicted cost of the extrapolation on the D − 1 chain with the finest width at
#: D may go before the coarsest width takes its place at D (module doc, "cost"): measured against the long
#: simulations, the finest width at D moved the reported 99.9th and 99.99th percentiles of the six cells where the
#: least choice was over the budget by +0.1 to +0.8 % (lognormal σ = 1, R = 10, ρ = 0.95: 5.5 s of CPU at a load
#: average 3.9), the coarsest by up to +6.4 % (triangular, R = 10, ρ = 0.95, 99.99th: +7.7 % of the simulation)
OVER_BUDGET = 1.25
#: the co-residents' stage widths are this multiple of the tagged customer's (fewer phases, so that more of them
#: can be tracked: at R = 3, ρ = 0.3, uniform service, two co-residents at twice the width moved the 99.99th
#: percentile from +6.1 % to +1.0 % of a simulation within the same time)
CO_FACTOR = 2
#: the phases of the co-residents' two-moment law for a law with a bounded support (:func:`co_representations`):
#: the triangular law's c² = 1/6 is Erlang-6 (at R = 1, ρ = 0.3, eight co-residents tracked as Erlang-6 put the
#: 99.99th percentile 0.4 % below a simulation, as Erlang-3 1.5 % above)
MAX_CO_PHASES = 6
#: largest number of co-residents whose phases are tracked (the cost decides below it: a bounded law's co-residents
#: have at most MAX_CO_PHASES phases, so that many of them fit where a stage family's could not)
MAX_CSTAR = 8
#: the cost model's constants (:class:`_CostModel`), fitted to the measured CPU seconds of whole calls by
#: ``benchmarks/tail_ph_cost.py`` (the calls and the fit recorded in ``benchmarks/tail_ph_cost.jsonl``; a test checks
#: these against the last fit there). A call's predicted CPU seconds are SECONDS_FIXED, plus per solve (the pilot's
#: included, and for a law that is not phase-type its sub-chain without changes, at the pilot's ratios of entries
#: and steps) E·(SECONDS_PER_ENTRY_STEP + (SECONDS_PER_ENTRY_PHASE_STEP + SECONDS_PER_SPILL_ENTRY_PHASE_STEP·L)·m)·s
#: + SECONDS_PER_SETUP_ENTRY·E by the numba kernel (own phases m > SCIPY_PHASES) or
#: E·m·((SECONDS_PER_CSR_ENTRY_STEP + SECONDS_PER_CSR_SPILL_ENTRY_STEP·L)·s + SECONDS_PER_SETUP_ENTRY) by scipy's CSR
#: product — L = log2 of how far the product vector E·m outgrows :data:`CACHE_ENTRIES` (0 within it: measured, the
#: cost per entry, phase and step rose from 0.2 to 0.37 ns in the kernel and from 0.7 to 1.4 ns in scipy's product
#: between 1 and 30 MB) —, plus SECONDS_PER_TRACKED_CONFIGURATION per count vector of the tracked co-residents and
#: phase (:func:`_tracked_configurations`: the environment's Python-level building, 1 of the 1.5 s at R = 1,
#: ρ = 0.95, gamma, every co-resident tracked), plus SECONDS_PER_MIX_TERM·P·(sqrt(q·t_max) + q/5) for its Poisson
#: mixing on the P grid points (a window of some 20 standard deviations of the step count per point), plus
#: SECONDS_PER_CHAIN_ENTRY per state and move of T's chain at each spread cap solved (building it). E = the
#: environment's states + moves: the states as :func:`chain_size` counts them (exact), the moves as it counts them
#: scaled by the pilot's built/counted ratio (T's moves between the same two states merge: 0.7 of those counted);
#: s = the solve's own uniformisation rate q (:meth:`_CostModel.rate`, exact from the pilot's chain: its width's
#: fastest phase, its co-residents', at the share 1/k; the sum λ + Rμ + both, taken before, was up to 1.6 times too
#: high) × where the pilot's survival fell below ``stop`` (shortened for a finer stage width,
#: :data:`STOP_WIDTH_EXPONENT`) — the constants per counted entry and predicted step, fitted, not rounded up by hand
#: a stage family's survival falls below ``stop`` sooner at a finer stage width (the coarse stages' exponential tail
#: beyond the law's own): measured, triangular R = 3, ρ = 0.9, D = 2: at t = 124, 107, 98 for widths 1/8, 1/16,
#: 1/32 where the pilot (width 1/4, D = 1) took 156; R = 10, ρ = 0.7: 12.2, 10.6, 9.8, 9.3 (widths 1/8 to 1/64)
#: against 15.2 — about (width ratio)^0.2; fitted on the calibration's solves, 0.19 (uniform), 0.21 (triangular),
#: 0.21 (lognormal σ = ln 2), 0.33 (deterministic, STOP_WIDTH_EXPONENT_DETERMINISTIC); where the pilot's survival
#: did not fall below ``stop`` on the grid, neither do the finer ones' (the grid's end)
STOP_WIDTH_EXPONENT = 0.2
STOP_WIDTH_EXPONENT_DETERMINISTIC = 0.33
SECONDS_FIXED = 0.0057
SECONDS_PER_ENTRY_STEP = 4.72e-09
SECONDS_PER_ENTRY_PHASE_STEP = 5.42e-11
SECONDS_PER_CSR_ENTRY_STEP = 1.03e-10
SECONDS_PER_SETUP_ENTRY = 0.0
SECONDS_PER_MIX_TERM = 7.5e-08
SECONDS_PER_CHAIN_ENTRY = 2.43e-06
SECONDS_PER_SPILL_ENTRY_PHASE_STEP = 3.32e-11
SECONDS_PER_CSR_SPILL_ENTRY_STEP = 1.9e-10
SECONDS_PER_TRACKED_CONFIGURATION = 4.05e-06
#: the names of the fitted constants, in the order of :meth:`_CostModel.features`
COST_CONSTANTS = ("SECONDS_FIXED", "SECONDS_PER_ENTRY_STEP", "SECONDS_PER_ENTRY_PHASE_STEP",
                  "SECONDS_PER_CSR_ENTRY_STEP", "SECONDS_PER_SETUP_ENTRY", "SECONDS_PER_MIX_TERM",
                  "SECONDS_PER_CHAIN_ENTRY", "SECONDS_PER_SPILL_ENTRY_PHASE_STEP",
                  "SECONDS_PER_CSR_SPILL_ENTRY_STEP", "SECONDS_PER_TRACKED_CONFIGURATION")
#: the product vector's entries (environment entries × own phases) up to which a solve's cost per entry and step is
#: flat (8 bytes each: 1 MiB, a core's L2 cache here); beyond, it grows with log2 of the excess (SPILL constants)
CACHE_ENTRIES = 2**17


#: the model error of the method's reported percentiles (relative: method / simulation − 1) at the 99.9th and
#: 99.99th percentile, by the law's variability class (:func:`variability_class`): the least and the largest over
#: the reference grid, each widened by the simulation's own 95 % half-width there — what ``sojourn plan`` states
#: and acts on. Measured: ``python benchmarks/tail_ph_method.py`` against ``benchmarks/tail_ph_reference.csv``
#: (R ∈ {1, 3, 5, 10} × ρ ∈ {0.1 … 0.95}); ``tests/jsq_ps/test_tail_ph.py`` checks these against that record.
MODEL_ERROR = {"deterministic": (-0.1, 0.12), "less variable": (-0.03, 0.06), "more variable": (-0.04, 0.06)}


def variability_class(law) -> str:
    """The class of :data:`MODEL_ERROR` a law belongs to: deterministic; less variable (scv ≤ 1); more variable."""
    if isinstance(law, Dist.Deterministic):
        return "deterministic"
    return "less variable" if law.scv <= 1.0 + 1e-12 else "more variable"


def model_error(law) -> tuple:
    """(mean, low, high) relative error of the method's percentile for ``law`` (:data:`MODEL_ERROR`; mean: the
    midpoint), the planner's measured error."""
    lo, hi = MODEL_ERROR[variability_class(law)]
    return (0.5 * (lo + hi), lo, hi)


def model_error_text(law) -> str:
    """One sentence: the method's measured model error for ``law``, from :data:`MODEL_ERROR`."""
    cls = variability_class(law)
    lo, hi = MODEL_ERROR[cls]
    what = {"deterministic": "deterministic service (an Erlang stage family extrapolated; the sharpest law)",
            "less variable": "laws at most as variable as the exponential (scv ≤ 1)",
            "more variable": "laws more variable than the exponential (scv > 1)"}[cls]
    return (f"its 99.9th and 99.99th percentiles lay within {100 * lo:+.0f} % to {100 * hi:+.0f} % of long "
            f"simulations for {what} on the paper's M/G/R grid, the simulations' own 95 % noise included")


# ---------------------------------------------------------------------------------------------------------------
# representations of the service law


@dataclass
class Representation:
    """The service law as the method uses it: ``reps`` — the PH representations (one if exact, else the stage family
    at widths 4h, 2h, h), ``exact`` — whether the law is phase-type, ``widths`` — the stage widths (empty if exact),
    ``sf`` and ``sf_eq`` — the exact survival and equilibrium residual survival."""

    law: object
    reps: list
    exact: bool
    widths: tuple
    sf: object
    sf_eq: object

    @property
    def phases(self) -> list:
        return [a.size for a, _ in self.reps]


def representation(law, widths=None) -> Representation:
    """:class:`Representation` of ``law`` (a :class:`sojourn.core.laws.distributions.Distribution`): its exact PH if it
    is
    one, else the stage family at ``widths`` (coarsest first; default the finest of :data:`FAMILIES`)."""
    ex = phase_fit.exact_representation(law)
    sf = phase_fit.survival(law)
    if ex is not None:
        return Representation(law, [ex], True, (), sf, None)
    widths = tuple(FAMILIES[-1] if widths is None else widths)
    reps = [phase_fit.stage_representation(law, w) for w in widths]
    return Representation(law, reps, False, widths, sf, phase_fit.equilibrium_survival(law))


def co_representations(law, widths) -> list | None:
    """The co-residents' representation per stage width of the tagged customer's (module doc, 2.): None for a
    phase-type law (its own); for a law with a bounded support (:func:`upper_bounded`) the Coxian matching its mean
    and c² (:func:`sojourn.core.laws.phase_fit.two_moment_representation`, at most :data:`MAX_CO_PHASES` phases) at
    every width; else the stage representation at :data:`CO_FACTOR` times each width."""
    if phase_fit.exact_representation(law) is not None:
        return None
    if upper_bounded(law):
        return [phase_fit.two_moment_representation(law, MAX_CO_PHASES)] * len(widths)
    return representation(law, tuple(CO_FACTOR * w for w in widths)).reps


def family(h: float) -> tuple:
    """The three-width family (4h, 2h, h) of a finest width h."""
    return (4.0 * h, 2.0 * h, h)


def _equilibrium_phase(alpha, S):
    """π_e ∝ α(−S)⁻¹: the phase of a customer found in service (time spent per phase)."""
    v = np.linalg.solve(-np.asarray(S, float).T, np.asarray(alpha, float))
    v = np.maximum(v, 0.0)
    return v / v.sum()


def _ph_survival_at(alpha, S, x):
    """α exp(S x) 1 at the points x (any shape), by uniformisation of the small PH chain."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return np.zeros(x.shape)
    S = np.asarray(S, float)
    th = float(np.max(-np.diag(S)))
    P = np.eye(S.shape[0]) + S / th
    K = poisson_cutoff(th * float(x.max()), 1e-14)
    g = np.empty(K)
    v = np.ones(S.shape[0])
    a = np.asarray(alpha, float)
    for j in range(K):
        g[j] = a @ v
        v = P @ v
    return np.clip(poisson_mix(th, x, g), 0.0, 1.0)


# ---------------------------------------------------------------------------------------------------------------
# the environment: T's tagged chain, with the tagged server's co-residents' phases while they are few


def _compositions(c: int, m: int) -> np.ndarray:
    """Every count vector of length m summing to c (c ≥ 0), as rows."""
    if c == 0:
        return np.zeros((1, m), np.int64)
    rows = []
    for comb in combinations_with_replacement(range(m), c):
        v = np.zeros(m, np.int64)
        np.add.at(v, list(comb), 1)
        rows.append(v)
    return np.array(rows, np.int64)


def _multinomial(comps: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Multinomial probabilities of the count vectors ``comps`` (rows summing to c) with cell probabilities p."""
    c = int(comps[0].sum()) if comps.size else 0
    logp = np.log(np.where(p > 0, p, 1.0))
    lw = math.lgamma(c + 1) - np.sum([[math.lgamma(v + 1) for v in row] for row in comps], axis=1) + comps @ logp
    w = np.where(np.all((comps == 0) | (p[None, :] > 0), axis=1), np.exp(lw), 0.0)
    return w / w.sum()


@dataclass
class Environment:
    """The chain the own phase runs on: states (T's tagged states × the co-residents' configurations), moves into
    each state as CSR by target (``ptr``, ``src``, ``rate`` unscaled), ``out`` the exit rate of each state (without
    the own completion), ``k`` the tagged server's occupancy, ``p0`` the initial law, and the T states ``base`` each
    state extends. ``cstar``: co-residents tracked up to this many."""

    ptr: np.ndarray
    src: np.ndarray
    rate: np.ndarray
    out: np.ndarray
    k: np.ndarray
    p0: np.ndarray
    base: np.ndarray
    cstar: int
    lost: float

    @property
    def size(self) -> int:
        return int(self.k.size)

    @property
    def n_moves(self) -> int:
        return int(self.src.size)


class _EnvironmentBuilder:
    """The moves of an :class:`Environment`, collected as (source, target, rate, change) blocks in a fixed order:
    T's moves from the states with 0, 1, … co-residents, then the tracked co-residents' own phase moves. The
    configurations of c co-residents at a T state with occupancy c + 1 are the count vectors ``comps[c]`` over the
    co-residents' phases while c ≤ ``cstar``, else one; the states of T state e are ``off[e]`` onwards."""

    def __init__(self, moves, co_alpha, co_S, cstar: int):
        self.a_c = np.asarray(co_alpha, float)
        self.S_c = np.asarray(co_S, float)
        m = self.m = self.a_c.size
        self.s_c = np.maximum(-self.S_c.sum(axis=1), 0.0)
        self.pe = _equilibrium_phase(self.a_c, self.S_c)
        k = self.k = moves.k.astype(np.int64)
        self.cmax = int(k.max()) - 1
        self.cstar = cstar = int(min(cstar, self.cmax))
        self.comps = [_compositions(c, m) for c in range(cstar + 1)]
        self.index = [{tuple(r): i for i, r in enumerate(cc)} for cc in self.comps]
        self.L = np.array([self.comps[c].shape[0] if c <= cstar else 1 for c in range(self.cmax + 2)], np.int64)
        self.nloc = self.L[k - 1]
        self.off = np.concatenate([[0], np.cumsum(self.nloc)]).astype(np.int64)
        self.n = int(self.off[-1])
        self.eye = np.eye(m, dtype=np.int64)
        self.rows_l, self.cols_l, self.vals_l, self.change_l = [], [], [], []

    def add(self, r, c_, v, change=False):
        """Moves r → c_ at v; ``change``: the move adds or removes a customer at the tagged server."""
        self.rows_l.append(np.asarray(r, np.int64).ravel())
        self.cols_l.append(np.asarray(c_, np.int64).ravel())
        self.vals_l.append(np.asarray(v, float).ravel())
        self.change_l.append(np.full(self.rows_l[-1].size, bool(change)))

    def _targets(self, c: int, rows) -> np.ndarray:
        """The indices among the configurations of c co-residents of the count vectors ``rows``."""
        return np.array([self.index[c][tuple(row)] for row in rows], np.int64)

    def tagged_moves(self, moves):
        """T's moves, each from every configuration of its source state."""
        R0, C0, V0 = moves.rows, moves.cols, moves.rate
        kr, kc = self.k[R0], self.k[C0]
        tagged_other = moves.kind == TAGGED_OTHER
        for c in range(self.cmax + 1):
            sel = kr - 1 == c
            if sel.any():
                self._moves_from(c, R0[sel], C0[sel], V0[sel], kc[sel], tagged_other[sel])

    def _moves_from(self, c, r0, c0, v0, kcc, tg):
        """T's moves r0 → c0 at v0 out of states with c co-residents (target occupancy ``kcc``, ``tg``: a
        co-resident's departure redirected by T's boundary)."""
        off, kk = self.off, c + 1
        tracked = c <= self.cstar
        Lc = int(self.L[c])
        loc = np.arange(Lc)
        same = kcc == kk
        m1 = same & ~tg  # the other servers' events: configuration kept
        if m1.any():
            self.add(off[r0[m1]][:, None] + loc[None, :], off[c0[m1]][:, None] + loc[None, :],
                     np.repeat(v0[m1], Lc).reshape(-1, Lc))
        m2 = same & tg  # a co-resident's departure, redirected by T's boundary (its configuration kept)
        if m2.any():
            dep = self.comps[c] @ self.s_c / kk if tracked else np.full(Lc, np.nan)  # tracked: rate Σ c_i s_i / k
            vals = np.broadcast_to(dep[None, :], (m2.sum(), Lc)) if tracked else np.repeat(v0[m2], Lc).reshape(-1, Lc)
            self.add(off[r0[m2]][:, None] + loc[None, :], off[c0[m2]][:, None] + loc[None, :], vals, True)
        up = kcc == kk + 1
        if up.any():
            self._joins(c, r0[up], c0[up], v0[up], loc)
        dn = kcc == kk - 1
        if dn.any():
            self._leaves(c, r0[dn], c0[dn], v0[dn], loc)

    def _joins(self, c, r, col, v, loc):
        """A customer joins the c co-residents: in the arrival's phase α if still tracked."""
        off, Lc = self.off, loc.size
        if c <= self.cstar and c + 1 <= self.cstar:
            for i in range(self.m):
                if self.a_c[i] <= 0:
                    continue
                tgt = self._targets(c + 1, self.comps[c] + self.eye[i])
                self.add(off[r][:, None] + loc[None, :], off[col][:, None] + tgt[None, :],
                         np.repeat(v * self.a_c[i], Lc).reshape(-1, Lc), True)
        else:  # into an untracked configuration (one per T state)
            self.add(off[r][:, None] + loc[None, :], np.repeat(off[col], Lc).reshape(-1, Lc),
                     np.repeat(v, Lc).reshape(-1, Lc), True)

    def _leaves(self, c, r, col, v, loc):
        """One of the c co-residents leaves: from its phase if tracked; phases drawn when the count falls to cstar."""
        off, kk, cstar = self.off, c + 1, self.cstar
        if c <= cstar:
            for i in range(self.m):
                if self.s_c[i] <= 0:
                    continue
                has = self.comps[c][:, i] > 0
                if not has.any():
                    continue
                tgt = self._targets(c - 1, self.comps[c][has] - self.eye[i])
                rr = self.comps[c][has, i] * self.s_c[i] / kk
                self.add(off[r][:, None] + loc[has][None, :], off[col][:, None] + tgt[None, :],
                         np.broadcast_to(rr[None, :], (r.size, has.sum())), True)
        elif c - 1 == cstar:  # the count falls to cstar: the phases drawn from the equilibrium law
            w = _multinomial(self.comps[cstar], self.pe)
            self.add(np.repeat(off[r], w.size).reshape(-1, w.size), off[col][:, None] + np.arange(w.size)[None, :],
                     v[:, None] * w[None, :], True)
        else:
            self.add(off[r], off[col], v, True)

    def co_phase_moves(self):
        """The tracked co-residents' own phase moves i → j (count vectors), at the tagged server's share."""
        off, m = self.off, self.m
        for c in range(1, self.cstar + 1):
            es = np.flatnonzero(self.k - 1 == c)
            if not es.size:
                continue
            kk = c + 1
            for i in range(m):
                for j in range(m):
                    if i == j or self.S_c[i, j] <= 0:
                        continue
                    has = self.comps[c][:, i] > 0
                    if not has.any():
                        continue
                    tgt = self._targets(c, self.comps[c][has] - self.eye[i] + self.eye[j])
                    rr = self.comps[c][has, i] * self.S_c[i, j] / kk
                    self.add(off[es][:, None] + np.flatnonzero(has)[None, :], off[es][:, None] + tgt[None, :],
                             np.broadcast_to(rr[None, :], (es.size, has.sum())))

    def initial_law(self, p0_base) -> np.ndarray:
        """T's initial law ``p0_base`` with the co-residents found in the equilibrium phase (multinomially)."""
        p0 = np.zeros(self.n)
        for c in range(self.cmax + 1):
            es = np.flatnonzero(self.k - 1 == c)
            if not es.size:
                continue
            w = _multinomial(self.comps[c], self.pe) if c <= self.cstar else np.ones(1)
            at = (self.off[es][:, None] + np.arange(w.size)[None, :]).ravel()
            p0[at] = (p0_base[es][:, None] * w[None, :]).ravel()
        return p0

    def environments(self, moves) -> tuple[Environment, Environment]:
        """The chain of the moves collected, and the same with every move that changes the tagged server's
        population killed (its rate left in ``out``)."""
        from scipy import sparse

        n = self.n
        rows = np.concatenate(self.rows_l)
        cols = np.concatenate(self.cols_l)
        vals = np.concatenate(self.vals_l)
        change = np.concatenate(self.change_l)
        out = np.bincount(rows, weights=vals, minlength=n)

        def by_target(sel):
            A = sparse.coo_matrix((vals[sel], (cols[sel], rows[sel])), shape=(n, n)).tocsr()
            A.sum_duplicates()
            return A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data.astype(float)

        base = np.repeat(np.arange(self.k.size), self.nloc)
        kx = self.k[base]
        p0 = self.initial_law(moves.p0)
        full = Environment(*by_target(np.ones(rows.size, bool)), out, kx, p0, base, self.cstar, moves.lost)
        unchanged = Environment(*by_target(~change), out, kx, p0, base, self.cstar, moves.lost)
        return full, unchanged


def environment(moves, co_alpha, co_S, mu: float, cstar: int) -> tuple[Environment, Environment]:
    """The :class:`Environment` on T's tagged moves ``moves`` (:class:`~.tail.TaggedMoves`) with the co-residents'
    law PH(co_alpha, co_S) tracked for up to ``cstar`` of them (module doc, 2.), and the same chain with every move
    that changes the tagged server's population killed."""
    b = _EnvironmentBuilder(moves, co_alpha, co_S, cstar)
    b.tagged_moves(moves)
    b.co_phase_moves()
    return b.environments(moves)


# ---------------------------------------------------------------------------------------------------------------
# the product chain: environment × own phase


def _coxian(S) -> np.ndarray | None:
    """S's superdiagonal if S is a Coxian (bidiagonal: phase j moves only to j + 1 or completes), else None."""
    S = np.asarray(S, float)
    m = S.shape[0]
    off = S - np.diag(np.diag(S))
    sup = np.concatenate([np.diag(S, 1), [0.0]]) if m > 1 else np.zeros(1)
    if np.count_nonzero(off) == np.count_nonzero(np.diag(S, 1)) and np.all(np.triu(off, 2) == 0) \
            and np.all(np.tril(off) == 0):
        return sup
    return None


def uniformisation_rate(env: Environment, own_S) -> float:
    own_out = -np.diag(np.asarray(own_S, float))
    return float(np.max(env.out + own_out.max() / env.k))


def product_masses(env: Environment, own_alpha, own_S, t_max: float, stop: float = STOP, q: float | None = None):
    """(g, steps, q): g_j = P(the tagged customer is still there after j uniformised steps), j < K = the Poisson cut of
    q·t_max (q: at least the chain's largest exit rate), stopped once g_j < ``stop``."""
    a = np.asarray(own_alpha, float)
    S = np.asarray(own_S, float)
    q = uniformisation_rate(env, S) if q is None else float(q)
    K = poisson_cutoff(q * float(t_max), 1e-13)
    own_out = -np.diag(S)
    keep = 1.0 - env.out / q
    speed = (1.0 / env.k) / q
    rate = env.rate / q
    x = np.ascontiguousarray(np.outer(env.p0, a))
    y = np.zeros_like(x)
    sup = _coxian(S)
    if x.size <= 4000 or a.size <= SCIPY_PHASES:  # scipy's CSR product: importing numba (~0.3 s) would cost more
        g, steps = _masses_scipy(env, rate, keep, speed, own_out, S, x, K, stop)
        return g, steps, q
    from . import _tail_ph_kernel as kern

    if sup is not None:
        g, steps = kern.masses(x, y, env.ptr, env.src, rate, keep, speed, own_out, sup, K, stop)
    else:
        off = S - np.diag(np.diag(S))
        oi, oj = np.nonzero(off)
        g, steps = kern.masses_general(x, y, env.ptr, env.src, rate, keep, speed, own_out, oi.astype(np.int64),
                                       oj.astype(np.int64), off[oi, oj], K, stop)
    return g, int(steps), q


#: own phases up to which the product chain is stepped as one scipy CSR matrix (the environment ⊗ the own phase),
#: not by the numba kernel: at m = 2 scipy's product (reverse Cuthill–McKee order) took 0.67 s where the kernel took
#: 1.56 s (R = 11, ρ = 0.98, gamma shape 2), and it spares importing numba (~0.3 s of ``sojourn plan``'s answer);
#: the kernel's cost per phase is lower, so it wins from m ≈ 4
SCIPY_PHASES = 3


def _masses_scipy(env, rate, keep, speed, own_out, S, x, K, stop):
    """:func:`product_masses`' g by a scipy CSR product of the whole chain (state e, own phase j at e·m + j)."""
    from scipy import sparse

    from .uniformization import uniformized_masses

    n, m = x.shape
    A = sparse.csr_matrix((rate, env.src, env.ptr), shape=(n, n))  # A[e, s]: into e from s (over q)
    Soff = (S - np.diag(np.diag(S))).T  # into j from i
    PT = (sparse.kron(A, sparse.identity(m), format="csr") + sparse.kron(sparse.diags(speed), sparse.csr_matrix(Soff),
                                                                         format="csr")
          + sparse.diags((keep[:, None] - speed[:, None] * own_out[None, :]).ravel())).tocsr()
    g, steps = uniformized_masses(PT, x.ravel(), K, stop)
    return g, int(steps)


# ---------------------------------------------------------------------------------------------------------------
# paths with no change at the tagged server (module doc, 3.)


def unchanged_mass(moves, t: np.ndarray, stop: float = 1e-15, laws=None, cut: float = 1e-16):
    """a[i, k] = P(the arrival finds k − 1 others at its server and nobody joins them until t_i), k = 0..k_max, from T's
    chain without the moves that add to the tagged server (killed) and without its co-residents' departures (left
    out: their stay enters through their own law). ``laws`` (own_sf, co_sf): a is computed only up to the last grid
    point where a term a_k(t)·own_sf(t/k)·co_sf(t/k)^(k−1) of :func:`unchanged_survival` can reach ``cut``
    (:func:`_unchanged_horizon`) — the rows of a stop there, a is 0 beyond: on a long grid the
    Poisson mixing of every group is most of a cell's cost (R = 1, ρ = 0.95, lognormal σ = 1, t to 2550: 12.6 of
    18.7 s), though mass held at the top level — where nobody can join — keeps the chain from stopping."""
    from scipy import sparse

    k = moves.k.astype(np.int64)
    n = k.size
    dk = k[moves.cols] - k[moves.rows]
    co = moves.kind == TAGGED_OTHER
    keep = ~co
    kill = keep & (dk > 0)
    stay = keep & ~kill
    A = sparse.coo_matrix((moves.rate[stay], (moves.cols[stay], moves.rows[stay])), shape=(n, n)).tocsr()  # by target
    A.sum_duplicates()
    out = np.bincount(moves.rows[keep], weights=moves.rate[keep], minlength=n)
    q = max(float(out.max()), 1e-12)
    K = poisson_cutoff(q * float(t.max()), 1e-13)
    kmax = int(k.max())
    from ._tail_ph_kernel import masses_by_group

    G, used = masses_by_group(moves.p0.astype(float).copy(), A.indptr.astype(np.int64), A.indices.astype(np.int64),
                              A.data / q, 1.0 - out / q, k, kmax + 1, K, stop)
    G = G[:used]
    n = t.size if laws is None else _unchanged_horizon(q, G, t, *laws, cut)
    return _poisson_mix(q, t[:n], G)


def _unchanged_horizon(q: float, G: np.ndarray, t: np.ndarray, own_sf, co_sf, cut: float, coarse: int = 500) -> int:
    """How many grid points to keep: beyond them every term a_k(t)·own_sf(t/k)·co_sf(t/k)^(k−1) (k ≥ 1) is below
    ``cut``. a_k(t) = Σ_j Pois(j; q t)·G[j, k] is at most the same mix of G's suffix maxima over j, which falls with t
    as the laws' factor does, so their product, evaluated on about ``coarse`` points of the grid, bounds it."""
    top = np.maximum.accumulate(G[::-1], axis=0)[::-1]  # max over j' ≥ j of G[j', k]
    ks = np.flatnonzero(top[0, 1:] >= cut) + 1
    if not ks.size or not t.size:
        return 0
    idx = np.unique(np.concatenate([np.arange(0, t.size, max(1, t.size // coarse)), [t.size - 1]]))
    bound = np.clip(_poisson_mix(q, t[idx], np.ascontiguousarray(top[:, ks])), 0.0, 1.0).T  # (k, coarse points)
    x = t[idx][None, :] / ks[:, None]
    f = own_sf(x) * np.where(ks[:, None] > 1, co_sf(x), 1.0) ** (ks[:, None] - 1)
    live = np.flatnonzero(np.any(bound * f >= cut, axis=0))
    if not live.size:
        return 0
    j = int(live[-1])
    return int(idx[j + 1]) + 1 if j + 1 < idx.size else t.size


def unchanged_survival(a: np.ndarray, t: np.ndarray, own_sf, co_sf, cut: float = 1e-16) -> np.ndarray:
    """Σ_k a_k(t)·own_sf(t/k)·co_sf(t/k)^(k−1) on the grid ``t`` (module doc, 3.): the laws evaluated once on every
    (k, t) where a_k(t) ≥ ``cut`` (the terms below it are left out: they move the sum by less than cut·k_max); a's rows
    may stop before the grid's (:func:`unchanged_mass`: 0 beyond)."""
    kk, ii = np.nonzero(a.T[1:] >= cut)
    kk = kk + 1
    out = np.zeros(t.size)
    if not kk.size:
        return out
    x = t[ii] / kk
    f = own_sf(x)
    many = kk > 1
    f[many] *= co_sf(x[many]) ** (kk[many] - 1)
    np.add.at(out, ii, a[ii, kk] * f)
    return out


# ---------------------------------------------------------------------------------------------------------------
# the method


@dataclass
class TailPHResult:
    cdf: np.ndarray
    sf_best: np.ndarray
    lower: np.ndarray
    D: int
    M: int
    n_states: int
    lambda_n: np.ndarray
    A_n: np.ndarray
    run_time: float
    info: dict = field(default_factory=dict)


def solve_features(env_size, env_moves, phases, steps) -> np.ndarray:
    """One product-chain solve's share of :meth:`_CostModel.features` (environment size and moves, own phases,
    steps): the numba kernel's entry-steps, entry-phase-steps and set-up entries, or scipy's CSR product's
    (:data:`SCIPY_PHASES`)."""
    e = float(env_size + env_moves)
    spill = math.log2(max(1.0, e * phases / CACHE_ENTRIES))  # the product vector beyond the cache (CACHE_ENTRIES)
    out = np.zeros(len(COST_CONSTANTS))
    if phases <= SCIPY_PHASES:
        out[[3, 4, 8]] = e * phases * steps, e * phases, e * phases * steps * spill
    else:
        out[[1, 2, 4, 7]] = e * steps, e * phases * steps, e, e * phases * steps * spill
    return out


def mix_terms(q: float, t_max: float, points: int) -> float:
    """The Poisson mixing's share of :meth:`_CostModel.features` for one solve (uniformisation rate q, grid to
    ``t_max`` of ``points`` points)."""
    return points * (math.sqrt(max(q * t_max, 0.0)) + q / 5.0)


def cost_coefficients() -> np.ndarray:
    """The fitted constants :data:`COST_CONSTANTS`, in that order."""
    return np.array([globals()[k] for k in COST_CONSTANTS])


def predicted_seconds(env_size, env_moves, phases, steps) -> float:
    """Predicted CPU seconds of one product-chain solve (:func:`solve_features` × the fitted constants)."""
    return float(cost_coefficients() @ solve_features(env_size, env_moves, phases, steps))


#: grid points × Poisson terms from which the Poisson mixing runs in the numba kernel (a fixed rule, so the choice
#: never depends on what was imported before): below it, importing numba (~0.3 s) would cost more than it saves
NUMBA_MIX_TERMS = 10_000_000


def _poisson_mix(q: float, t: np.ndarray, G: np.ndarray) -> np.ndarray:
    """:func:`~.uniformization.poisson_mix` of the rows of ``G`` (K × columns) on the grid ``t``; the numba kernel's
    ratio recursion on large grids (:data:`NUMBA_MIX_TERMS`)."""
    t = np.asarray(t, dtype=float)
    if t.size * G.shape[0] < NUMBA_MIX_TERMS:
        return poisson_mix(q, t, G)
    from ._tail_ph_kernel import poisson_mix as kernel_mix

    return kernel_mix(float(q), t.ravel(), np.ascontiguousarray(G, dtype=float)).reshape(t.shape + G.shape[1:])


#: :func:`_knot_mix`: knots per standard deviation sqrt(t/q) of the Poisson time of the step count, and the grid
#: points × Poisson terms from which it interpolates between knots (below it every point is mixed)
KNOTS_PER_SD = 24
KNOT_MIX_TERMS = 100_000_000


def _knot_mix(q: float, t: np.ndarray, G: np.ndarray) -> np.ndarray:
    """:func:`_poisson_mix` of G on an ascending grid t, on a long grid mixed only at knots and interpolated between
    them (a cubic spline of the logarithm). A Poisson mixture Σ_j Pois(j; q t)·G_j varies on the scale of the
    standard deviation sqrt(t/q) of the time of j steps, so knots :data:`KNOTS_PER_SD` to a standard deviation (never
    sparser than the grid) resolve it: on a grid to 2550 with dt = 0.01 (R = 1, ρ = 0.95, lognormal σ = 1) the mixing
    fell from 3.1 s to 0.1 s, the survival moved by < 1e-7 of itself (``tests/jsq_ps/test_tail_ph.py``)."""
    t = np.asarray(t, dtype=float)
    terms = t.size * 20.0 * math.sqrt(max(q * float(t[-1]), 1.0)) if t.size else 0.0
    if t.ndim != 1 or t.size < 8 or terms < KNOT_MIX_TERMS or np.any(np.diff(t) <= 0):
        return _poisson_mix(q, t, G)
    from scipy.interpolate import CubicSpline

    knots, i = [], 0
    while i < t.size - 1:
        knots.append(i)
        step = math.sqrt(max(t[i], 0.0) / q) / KNOTS_PER_SD
        i = int(np.searchsorted(t, t[i] + step, side="right")) - 1 if step > 0 else i + 1
        i = max(i, knots[-1] + 1)
    knots.append(t.size - 1)
    kn = np.asarray(knots)
    at = _poisson_mix(q, t[kn], G)
    if kn.size == t.size:
        return at
    tiny = np.finfo(float).tiny
    out = np.exp(CubicSpline(t[kn], np.log(np.maximum(at, tiny)), axis=0)(t))
    out[kn] = at
    return np.where(out <= 10 * tiny, 0.0, out)


def mixed_survivals(t: np.ndarray, solves) -> list:
    """The survival Σ_j Pois(j; q·t)·g_j of every (g, steps, q) of ``solves`` on the grid ``t``, g_j held at
    g_{steps−1} beyond the steps computed (an upper bound, off by less than that last value) up to the Poisson cut
    K = len(g) of q·t_max (the held tail beyond K, < 1e-13 of that value, left out); the Poisson weights computed
    once per distinct q."""
    out = [None] * len(solves)
    groups = {}
    for n, (g, _steps, q) in enumerate(solves):
        groups.setdefault((float(q), len(g)), []).append(n)
    for (q, K), members in groups.items():
        G = np.empty((K, len(members)))
        for c, n in enumerate(members):
            g, steps, _ = solves[n]
            G[:steps, c] = g[:steps]
            G[steps:, c] = g[steps - 1]
        sf = np.clip(_knot_mix(q, t, G), 0.0, 1.0)
        for c, n in enumerate(members):
            out[n] = sf[:, c]
    return out


def tail_ph_sojourn(arrival_rate, law, servers, t, D=None, h=None, cstar=None, max_seconds=DEFAULT_SECONDS,
                    eps=LEVEL_EPS, floor=FLOOR, stop=STOP, co_factor=CO_FACTOR) -> TailPHResult:
    """Method T with service law ``law`` (module doc): P(sojourn ≤ t) on the grid ``t``.

    ``D`` (≥ 2): the spread cap (D − 1 is solved too, at the coarsest width); ``h``: the finest stage width of a law
    that is not phase-type, in (0, 1/4] (the family (4h, 2h, h)); ``cstar``: co-residents tracked
    (0..:data:`MAX_CSTAR`). Defaults: chosen by predicted cost within ``max_seconds`` CPU seconds (:func:`_plan`).
    Returns a :class:`TailPHResult` (``cdf`` with T's allowance, ``sf_best`` the estimate, ``lower`` the other side
    of the allowance, λ_n and A_n of T's system law, ``info``)."""
    t0 = time.process_time()
    lam, R = float(arrival_rate), int(servers)
    mu = 1.0 / float(law.mean)
    t = np.asarray(t, dtype=float)
    t_max = float(t.max()) if t.size else 0.0
    _check_memory(R, D)
    with single_threaded_blas():
        M, pi, ph = _levels(lam, mu, R, eps)
        plan = _plan(lam, mu, R, M, law, t_max, D, h, cstar, max_seconds, eps, stop, t.size)
        widths = plan["widths"]
        rep = representation(law, widths)
        co_reps = co_representations(law, widths) if co_factor == CO_FACTOR else (
            None if (rep.exact or co_factor == 1) else representation(law, tuple(co_factor * w for w in widths)).reps)
        Dlist, sols = _chains(lam, mu, R, M, plan, pi, ph)
        cell = _Cell(t, t_max, mu, stop, rep, co_reps, plan, sols)
        est = cell.estimate(Dlist, R)
        mv_best, pi_best, ph_best = sols[Dlist[-1]]
        best = _monotone(np.clip(est.best, 0.0, 1.0))
        sf_c = np.minimum(1.0, best + est.env_incr + floor * best)  # T's allowance (module doc, "the stated bound")
        low = np.maximum(0.0, best - est.env_incr - floor * best)
        lam_n, A_n = per_server_rates(pi_best, ph_best, lam)
        top = float(pi_best.sum(axis=1)[-1])
        info = {"D": plan["D"], "M": M, "h": plan["h"], "cstar": plan["cstar"], "stage_phases": rep.phases,
                "stage_widths": len(rep.widths),
                "representation": "exact phase-type" if rep.exact else "stage family, extrapolated",
                "states": est.states, "steps": est.steps, "uniformization_rate": est.q, "widths_at": est.widths_at,
                "initial_mass_lost": mv_best.lost, "top_level_mass": top, "truncation_tolerance": eps,
                "truncation_reached": int(top < eps), "predicted_seconds": plan["predicted"],
                "cost_features": plan["cost_features"].tolist(),
                "stop": stop}
        info["margin_parts"] = (est.env_incr, est.rich_incr)
        for p in (0.99, 0.999, 0.9999, 0.99999):  # the extrapolation's own change from two to three widths
            info[f"extrapolation_{100 * p:g}"] = _relative_shift(t, best, est.rich_incr, p)
        return TailPHResult(1.0 - _monotone(sf_c), best, low, plan["D"], M, est.states, lam_n, A_n,
                            time.process_time() - t0, info)


def _check_memory(R: int, D):
    """MemoryError, before any compute, where T's chain at R servers (spread cap D, default 2) needs more memory than
    the limit."""
    from ...core.checks.inputs import format_bytes, limits
    from .tail import peak_bytes

    need, (mem_limit, mem_src, _, _) = peak_bytes(R, 2 if D is None else int(D)), limits()
    if need > mem_limit:
        raise MemoryError(f"method T at R = {R} needs about {format_bytes(need)}, above the limit "
                          f"{format_bytes(mem_limit)} ({mem_src})")


def _levels(lam, mu, R, eps):
    """(M, π, phases): T's level cap; at R = 1 also the system law of T's chain, M/M/1-PS (level = the occupancy);
    at R > 1 the law depends on the spread cap (None, None)."""
    if R == 1:  # no other server
        return level_cap(lam, mu, R, 0, eps)
    _, pi1, _ = level_cap(lam, mu, R, 1, eps)
    return max(8, _levels_for(pi1.sum(axis=1), eps / 3)), None, None


def _chains(lam, mu, R, M, plan, pi, ph):
    """The spread caps solved ([0] at R = 1, else [D − 1, D]) and per cap T's tagged moves and system law (π,
    phases); the pilot's chain reused for D − 1 = 1. ``pi``, ``ph``: the system law at R = 1."""
    Dlist = [0] if R == 1 else [plan["D"] - 1, plan["D"]]
    sols = {}
    for d in Dlist:
        if R > 1 and d == 1:  # the pilot's chain
            sols[d] = (plan["pilot"]["moves"], None, None)
            continue
        if R > 1:
            ph, pi = system_law(lam, mu, R, M, d)
        sols[d] = (tagged_moves(lam, mu, R, M, d, d + TAGGED_EXTRA if R > 1 else 0, pi, ph), pi, ph)
    return Dlist, sols


@dataclass
class _Estimate:
    """The survival estimate of a cell before clipping (``best``), the spread cap's increment (``env_incr``), the
    extrapolation's change from one width fewer (``rich_incr``), and what the margin's width was solved on."""

    best: np.ndarray
    env_incr: np.ndarray
    rich_incr: np.ndarray
    widths_at: str
    states: int
    steps: int
    q: float


@dataclass
class _Cell:
    """One cell's solves: the grid, the law's representations (tagged, co-residents'), the plan (:func:`_plan`) and
    T's chains per spread cap (:func:`_chains`)."""

    t: np.ndarray
    t_max: float
    mu: float
    stop: float
    rep: Representation
    co_reps: list | None
    plan: dict
    sols: dict

    def solves(self, d, which):
        """On the chain of spread cap ``d``: per representation rep.reps[i], i in ``which`` (each with its own
        co-residents' representation), the uniformised masses (g, steps, q) of the chain and, unless the law is
        phase-type, of its sub-chain with every change at the tagged server killed (the chain's own value of the
        unchanged paths, module doc 3.); the exact value of those paths (None if phase-type); the states per i."""
        rep, plan, cstar = self.rep, self.plan, self.plan["cstar"]
        plain = rep.exact  # a phase-type law is its own representation: no smoothing to undo (module doc, 3.)
        pilot = plan["pilot"]["solve"]
        mv = self.sols[d][0]
        ex = None
        if not plain:
            co_eq = rep.sf_eq if rep.sf_eq is not None else _ph_equilibrium_sf(rep.reps[-1])
            if self.co_reps is not None and upper_bounded(rep.law):  # the co-residents' own law (module doc, 3.)
                co_eq = _ph_equilibrium_sf(self.co_reps[0])
            laws = (rep.sf, co_eq)
            ex = unchanged_survival(unchanged_mass(mv, self.t, laws=laws), self.t, *laws)
        raw, sizes, envs = {}, {}, {}
        for i in which:
            al, S = rep.reps[i]
            co = self.co_reps[i] if self.co_reps is not None else (al, S)
            key = (id(co[0]), id(co[1]))  # a bounded law's co-residents have one law at every width: built once
            if key not in envs:
                envs[key] = environment(mv, co[0], co[1], self.mu, cstar)
            env, still = envs[key]
            if pilot is not None and d == 1 and i == 0 and cstar == 0 and plan["family"] == 0:
                full = pilot  # the planner's pilot solved this very chain (_plan)
            else:
                full = product_masses(env, al, S, self.t_max, self.stop)
            raw[i] = [full] if plain else [full, product_masses(still, al, S, self.t_max, self.stop, full[2])]
            sizes[i] = env.size * al.size
        return raw, ex, sizes

    def rests(self, raw_D, raw_p) -> dict:
        """Per chain ("D": the spread cap D, "p": D − 1) and width, the survival less the chain's own value of the
        unchanged paths, all mixed in one pass (:func:`mixed_survivals`)."""
        order = [(which, i) for which, raw in (("D", raw_D), ("p", raw_p)) for i in sorted(raw)]
        mixed = iter(mixed_survivals(self.t, [m for which, i in order for m in (raw_D if which == "D" else raw_p)[i]]))
        rests = {"D": {}, "p": {}}
        for which, i in order:
            sf = next(mixed)
            rests[which][i] = sf if self.rep.exact else sf - next(mixed)
        return rests

    def extrapolated(self, by_width):
        """The survivals at the widths extrapolated to h → 0, and the extrapolation's change from one width fewer."""
        v = [by_width[i] for i in range(len(self.rep.reps))]
        if len(v) == 1:
            return v[0], np.zeros(self.t.size)
        r = phase_fit.richardson(v)
        return r, np.abs(r - phase_fit.richardson(v[1:]))

    def estimate(self, Dlist, R) -> _Estimate:
        """The survival extrapolated in h plus the exact value of the unchanged paths, and the spread cap's
        increment at the margin's width (module doc, "the stated margin" and "cost")."""
        plain, at_D = self.rep.exact, self.plan["at_D"]  # at_D None: every width at D; else only at_D there
        fine_i = len(self.rep.reps) - 1
        every = list(range(len(self.rep.reps)))
        w = fine_i if at_D is None else at_D  # the width whose change from D − 1 to D is the margin
        raw_D, ex_D, sizes = self.solves(Dlist[-1], every if at_D is None else [at_D])
        raw_p, ex_p, _ = self.solves(Dlist[0], [fine_i] if at_D is None else every) if R > 1 else ({}, None, {})
        rests = self.rests(raw_D, raw_p)
        if at_D is None:
            rest, rich_incr = self.extrapolated(rests["D"])
        else:  # the extrapolation on the D − 1 chain, plus width w's change from D − 1 to D
            r_p, rich_incr = self.extrapolated(rests["p"])
            rest = r_p + (rests["D"][w] - rests["p"][w])
        best = rest if plain else ex_D + rest
        env_incr = np.zeros(self.t.size)
        if R > 1:  # the spread cap's increment, at width w (module doc, "the stated margin")
            at = rests["D"][w] if plain else ex_D + rests["D"][w]
            env_incr = np.abs(at - (rests["p"][w] if plain else ex_p + rests["p"][w]))
        widths_at = "D" if at_D is None else ("D-1, finest at D" if at_D == fine_i else "D-1, coarsest at D")
        _, steps, q = raw_D[w][0]
        return _Estimate(best, env_incr, rich_incr, widths_at, sizes[w], steps, q)


def _relative_shift(t, sf, incr, p) -> float:
    """x_p(sf + incr)/x_p(sf) − 1: how far the percentile moves when the survival rises by ``incr`` (NaN beyond the
    grid; 0 where ``incr`` is 0)."""
    from ...core.estimates.stats import quantile

    if not np.any(incr):
        return 0.0
    a = float(quantile(t, 1.0 - _monotone(np.minimum(1.0, sf + incr)), p))
    b = float(quantile(t, 1.0 - sf, p))
    return a / b - 1.0 if (math.isfinite(a) and math.isfinite(b) and b > 0) else float("nan")


def _ph_equilibrium_sf(rep):
    """The equilibrium residual survival of a phase-type law (α, S): the PH started in its equilibrium phase."""
    a, S = rep
    pe = _equilibrium_phase(a, S)
    return lambda x: _ph_survival_at(pe, S, x)


def _configs(c: int, m: int, cstar: int) -> int:
    """Configurations of c co-residents: count vectors over m phases if c ≤ cstar, else one."""
    return math.comb(c + m - 1, m - 1) if c <= cstar else 1


def chain_size(R: int, M: int, D: int, cstar: int, m_co: int, co_moves: float = 2.0) -> tuple[int, int]:
    """(states, moves) of the environment (T's tagged states × the configurations of up to ``cstar`` co-residents
    over ``m_co`` phases, ``co_moves`` moves out of each occupied phase: a departure and a phase move in a stage
    family's), counted from T's phase table without building it (moves about 30 % high)."""
    per_phase, ot = _phase_moves(int(R), int(D))
    k = np.arange(M)[:, None] + ot[None, :]
    # (capped where the count vectors are far beyond any budget: math.comb outgrows int64 at a large cstar)
    table = np.array([min(_configs(c, m_co, cstar), 10**12) for c in range(int(k.max()) + 1)], np.int64)
    conf = table[np.maximum(k - 1, 0)] * (k >= 1)
    states = int(conf.sum())
    # a configuration's own moves: ``co_moves`` out of each occupied phase (≤ m_co of them)
    moves = int((conf * (per_phase[None, :] + co_moves * np.minimum(np.maximum(k - 1, 0), min(cstar, m_co)))).sum())
    return states, moves


@functools.lru_cache(maxsize=64)
def _phase_moves(R: int, D: int) -> tuple[np.ndarray, np.ndarray]:
    """(moves out of each phase, tagged offset of each phase) of T's phase table at R servers and spread cap D: what
    :func:`chain_size` counts from. Kept per (R, D): the planner's cost model asks for the same few tables dozens of
    times a cell (0.2–0.4 s of a cell's 3–5 s of CPU rebuilding them)."""
    from .tail import TaggedPhases

    tp = TaggedPhases(R, D, D + TAGGED_EXTRA if R > 1 else 0)
    per_phase = np.bincount(tp.table(1.0, 1.0).src, minlength=tp.size)
    ot = tp.ot.copy()
    per_phase.setflags(write=False)
    ot.setflags(write=False)
    return per_phase, ot


def upper_bounded(law) -> bool:
    """Whether the law's support is bounded (deterministic, uniform, triangular): its stage family needs three
    widths."""
    return phase_fit.upper_end(law) is not None


def _pilot_moves(lam, mu, R, M, eps):
    """T's tagged moves of the planner's pilot: at R = 1 the M/M/1-PS chain, else the chain with spread cap 1 on the
    final levels (the final D − 1 when D = 2)."""
    if R == 1:
        _, pi, ph = level_cap(lam, mu, R, 0, eps)
        mv = tagged_moves(lam, mu, R, M, 0, 0, pi, ph) if pi.shape[0] == M else None
        if mv is None:
            M0, pi, ph = level_cap(lam, mu, R, 0, eps)
            mv = tagged_moves(lam, mu, R, M0, 0, 0, pi, ph)
        return mv
    ph, pi = system_law(lam, mu, R, M, 1)
    return tagged_moves(lam, mu, R, M, 1, 1 + TAGGED_EXTRA, pi, ph)


def _stage_families(law, h, exact: bool) -> list:
    """The stage families the planner may choose from: none for a phase-type law, the family of a given finest
    width h, else :data:`FAMILIES` (only the three-width ones for a bounded law)."""
    families = [None] if exact else ([family(float(h))] if h is not None else list(FAMILIES))
    if upper_bounded(law) and h is None:  # two widths leave a bounded law's edge 12 % off (FAMILIES)
        families = [f for f in families if len(f) == 3]
        if not isinstance(law, Dist.Deterministic):
            families.append(FINE_FAMILY)
    return families


def _upgrades(R: int, M: int, D, cstar, n_families: int, co_first: bool = False, fine_last: bool = False) -> list:
    """The planner's upgrades (key, value) in order (:func:`_plan`), those of the choices not given. ``co_first``:
    the co-residents' law has few phases (a bounded law's two-moment fit, :func:`co_representations`): the finest
    family and two co-residents come before D = 3, and then each further spread cap is followed by one more
    co-resident tracked (at R = 3, ρ = 0.5, triangular service, the 99.99th percentile was 6.0 % above a simulation
    with D = 8 and two co-residents tracked, 2.4 % with D = 4 and four; at R = 10, ρ = 0.7, uniform, 6.6 % with
    D = 3 and one, 4.2 % with D = 2 and two)."""
    upgrades = []
    ds = [("D", d) for d in range(3, MAX_D + 1)] if D is None and R > 1 else []
    cs = [("cstar", c) for c in range(1, MAX_CSTAR + 1)] if cstar is None else []
    fam = [("family", f) for f in range(1, n_families)]
    if co_first:  # the finer family (FINE_FAMILY), if offered, once two co-residents are tracked
        fine = fam[-1:] if fine_last else []
        upgrades += (cs[:1] + fam[:len(fam) - len(fine)] + cs[1:2] + fine
                     + [u for i in range(max(len(ds), len(cs))) for u in ds[i:i + 1] + cs[i + 2:i + 3]])
    else:
        upgrades += cs[:1] + fam[:1] + ds[:1] + fam[1:] + cs[1:2] + ds[1:] + cs[2:]
    if cstar is None:
        if R == 1:  # every co-resident tracked: the exact M/PH/1-PS chain for a phase-type law (module doc, 2.)
            upgrades.append(("cstar", M))
    return upgrades


@dataclass
class _CostModel:
    """Predicted CPU seconds of a choice (:func:`_plan`) and of the whole call: the solves it implies
    (:func:`chain_size`, each at its own uniformisation rate × ``t_stop``, where the pilot's survival fell below
    ``stop``) and the pilot's own solve (``pilot``: its environment's states + moves, own phases and steps; not
    counted again where the method reuses it), by the fitted constants (:data:`COST_CONSTANTS`). ``reps``: per family
    its :class:`Representation`; ``co_phases``, ``co_max``: per family and width the co-residents' phases and the
    largest exit rate of one of them; ``co_moves``: per family the moves out of one of their phases (phase moves and
    completions, on average over the phases)."""

    lam: float
    mu: float
    R: int
    M: int
    reps: dict
    co_phases: dict
    co_max: dict
    co_moves: dict
    t_stop: float
    pilot: tuple = (0, 0, 0, 0)
    t_max: float = 0.0
    points: int = 0
    still: tuple = (0.0, 0.0)
    pilot_width: float = 0.0
    exits: tuple = (np.zeros(1), np.ones(1))
    moves_scale: float = 1.0
    pilot_stopped: bool = True

    def decay_time(self, rep, i) -> float:
        """Where the survival of width ``rep.widths[i]`` falls below ``stop``: the pilot's, shortened for a bounded
        law by (width / the pilot's width)^STOP_WIDTH_EXPONENT (:data:`STOP_WIDTH_EXPONENT`)."""
        if rep.exact or not self.pilot_width or not self.pilot_stopped:  # (not stopped: the finer ones neither)
            return self.t_stop
        a = STOP_WIDTH_EXPONENT_DETERMINISTIC if isinstance(rep.law, Dist.Deterministic) else STOP_WIDTH_EXPONENT
        return self.t_stop * (rep.widths[i] / self.pilot_width) ** a

    def rate(self, S, co_max: float, cstar: int) -> float:
        """The uniformisation rate of a solve (:func:`uniformisation_rate`) from the pilot's chain (``exits``: T's
        exit rate and the tagged server's occupancy per state): T's exits, the own fastest phase at the share 1/k
        and the tracked co-residents' fastest, each at 1/k."""
        out, k = self.exits
        own = float(np.max(-np.diag(S)))
        return float(np.max(out + (own + np.minimum(k - 1.0, cstar) * co_max) / k))

    def solves(self, c: dict) -> list:
        """The solves of the choice ``c`` (keys D, family, cstar, at_D): (spread cap, width index)."""
        n, w, D = len(self.reps[c["family"]].reps), c["at_D"], c["D"]
        if w is None:  # every width at D, the finest at D − 1 (the margin)
            return [(D, i) for i in range(n)] + ([(D - 1, n - 1)] if self.R > 1 else [])
        return [(D, w)] + [(D - 1, i) for i in range(n)]  # width w at D, every width at D − 1 (the extrapolation)

    def features(self, c: dict) -> np.ndarray:
        """The quantities the fitted constants multiply (:data:`COST_CONSTANTS`) for the whole call with choice
        ``c``."""
        f, cstar = c["family"], c["cstar"]
        rep, out = self.reps[f], np.zeros(len(COST_CONSTANTS))
        out[0] = 1.0
        size, steps = self.still  # the sub-chain without changes at the tagged server, relative (the pilot's)
        out += solve_features(*self.pilot)
        if not rep.exact:
            out += solve_features(size * (self.pilot[0] + self.pilot[1]), 0, self.pilot[2], steps * self.pilot[3])
        solves = self.solves(c)
        for d, i in solves:
            _, S = rep.reps[i]
            q = self.rate(S, self.co_max[f][i], cstar)
            out[5] += mix_terms(q, self.t_max, self.points)
            st, mo = chain_size(self.R, self.M, d, cstar, self.co_phases[f][i], self.co_moves[f])
            mo = mo * self.moves_scale
            out[9] += _tracked_configurations(min(cstar, self.M + d), self.co_phases[f][i])
            if not (d == 1 and i == 0 and cstar == 0 and f == 0):  # else the pilot's (_Cell.solves reuses it)
                out += solve_features(st, mo, S.shape[0], q * self.decay_time(rep, i))
            if not rep.exact:  # and its sub-chain without changes at the tagged server (_Cell.solves)
                out += solve_features(size * (st + mo), 0, S.shape[0], steps * q * self.decay_time(rep, i))
        for d in sorted({d for d, _ in solves} | ({1} if self.R > 1 else {0})):  # T's chains (the pilot's at D = 1)
            out[6] += sum(chain_size(self.R, self.M, d, 0, 1, 0.0))
        return out

    def seconds(self, c: dict) -> float:
        """Predicted CPU seconds of the whole call with choice ``c``."""
        return float(cost_coefficients() @ self.features(c))


def _tracked_configurations(cstar: int, m: int) -> float:
    """The count vectors of up to ``cstar`` co-residents over ``m`` phases, times m: the environment's Python-level
    building (:class:`_EnvironmentBuilder`: each vector's moves looked up per phase)."""
    return float(m * math.comb(cstar + m, m))  # Σ_{c ≤ cstar} comb(c + m − 1, m − 1) = comb(cstar + m, m)


def _moves_per_phase(S) -> float:
    """The moves out of a phase of PH(·, S) on average: its phase moves and its completion (if it can complete)."""
    S = np.asarray(S, float)
    off = np.count_nonzero(S - np.diag(np.diag(S)))
    return (off + np.count_nonzero(-S.sum(axis=1) > 1e-12 * np.abs(np.diag(S)))) / S.shape[0]


def _plan(lam, mu, R, M, law, t_max, D, h, cstar, max_seconds, eps, stop, points=None):
    """The stage family, spread cap D and tracked co-residents of a cell (given ones kept), upgraded in the order
    cstar 0 → 1, the next family of :data:`FAMILIES`, D 2 → 3, the finest family, cstar → 2, D → MAX_D, cstar →
    MAX_CSTAR while the predicted CPU seconds of the solves (:func:`chain_size` × uniformised steps, at the
    survival's decay measured by a pilot: the coarsest stage representation, D = 1, no co-resident tracked) stay
    within ``max_seconds`` — predicted, not measured, so the same choice on any machine; the least choice runs
    however long it takes (the cheapest family, D = 2)."""
    points = int(round(t_max / 0.01)) + 1 if points is None else int(points)  # the paper's dt by default
    mv = _pilot_moves(lam, mu, R, M, eps)
    exact = phase_fit.exact_representation(law) is not None
    families = _stage_families(law, h, exact)
    reps = {i: representation(law, f) for i, f in enumerate(families)}
    coarse = reps[0].reps[0]
    env, still = environment(mv, coarse[0], coarse[1], mu, 0)
    pilot_g, steps, _q = product_masses(env, coarse[0], coarse[1], t_max, stop)
    t_stop = steps / _q  # where the pilot's survival fell below ``stop`` (or t_max)
    still_cost = (0.0, 0.0)  # the sub-chain without changes: its entries and steps relative to the chain's
    if not exact:
        _, still_steps, _ = product_masses(still, coarse[0], coarse[1], t_max, stop, _q)
        still_cost = ((still.size + still.n_moves) / (env.size + env.n_moves), still_steps / steps)
    co = {i: co_representations(law, families[i]) or reps[i].reps for i in reps}
    co_max = {i: [float(np.max(-np.diag(S))) for _, S in co[i]] for i in co}
    co_moves = {i: max(_moves_per_phase(S) for _, S in co[i]) for i in co}
    # the moves chain_size counts against those the pilot's chain has (T's boundaries: up to 1.9 times as many counted)
    counted = chain_size(R, mv.size + 1 if R == 1 else M, 1 if R > 1 else 0, 0, 1, 0.0)[1]
    exits = (np.bincount(mv.rows, weights=mv.rate, minlength=mv.size), mv.k.astype(float))
    model = _CostModel(lam, mu, R, M, reps, {i: [a.size for a, _ in co[i]] for i in co}, co_max, co_moves, t_stop,
                       (env.size, env.n_moves, coarse[0].size, steps), t_max, points, still_cost,
                       0.0 if exact else reps[0].widths[0], exits, env.n_moves / counted if counted else 1.0,
                       steps < len(pilot_g))
    seconds = model.seconds
    choice = {"D": 0 if R == 1 else (2 if D is None else int(D)), "family": 0,
              "cstar": 0 if cstar is None else int(cstar), "at_D": None}
    if R > 1 and len(reps[0].phases) > 1 and seconds(choice) > max_seconds:
        # the least choice does not fit: the extrapolation on the D − 1 chain (module doc, "cost"), with the finest
        # width at D, or the coarsest if even that is predicted beyond OVER_BUDGET times the budget
        choice["at_D"] = len(reps[0].phases) - 1
        if seconds(choice) > OVER_BUDGET * max_seconds:
            choice["at_D"] = 0
    co_first = not exact and upper_bounded(law)
    fine_last = families[-1] == FINE_FAMILY
    for key, val in _upgrades(R, M, D, cstar, len(families), co_first, fine_last):
        trial = {**choice, key: val}
        if key == "D" and choice["D"] != val - 1:
            continue  # D grows one step at a time
        if seconds(trial) <= max_seconds:
            choice = trial
    choice["widths"] = families[choice["family"]]
    choice["h"] = 0.0 if exact else float(families[choice["family"]][-1])
    # the pilot's solve is the coarsest width's at D = 1 without tracked co-residents: reused when the method needs it
    choice["pilot"] = {"moves": mv, "solve": (pilot_g, steps, _q) if R > 1 else None}
    choice["predicted"] = seconds(choice)
    choice["cost_features"] = model.features(choice)
    choice["pilot_steps"] = steps
    choice["t_stop"] = t_stop
    return choice


def api_result(spec, hyper, t) -> dict:
    """Method T with the spec's (non-exponential) service law, for :mod:`sojourn.jsq_ps.solve.api`."""
    from .tail import margins

    w0 = time.perf_counter()
    res = tail_ph_sojourn(spec.arrival_rate, spec.service, spec.R, t, D=hyper.get("tail_D"),
                          h=hyper.get("tail_h"), cstar=hyper.get("tail_cstar"),
                          max_seconds=hyper.get("tail_seconds", DEFAULT_SECONDS))
    info = {k: v for k, v in res.info.items() if k not in ("margin_parts", "cost_features")}
    info["stage_phases"] = ",".join(str(x) for x in info.get("stage_phases", []))
    info.update(margins(t, res))
    info["cpu_seconds"] = res.run_time
    info["truncated_mass"] = float(info.get("top_level_mass", 0.0) + info.get("initial_mass_lost", 0.0))
    info["service_law"] = str(spec.service)
    return {"cdf": res.cdf, "lambda_n": res.lambda_n, "A_n": res.A_n, "run_time": time.perf_counter() - w0,
            "L1": res.M, "L2": res.M + res.D + TAGGED_EXTRA, "faithful": False, "info": info}
