"""Names of the JSQ-PS study that several parts share, with no heavy imports: the methods, Table 4, the
coordinate attributes and the fixed-decimal load labels."""
from __future__ import annotations

import math

#: paper-faithful A–F, corrected A*–F* (reference §8.3), the exact tagged-customer chain, and T (the tagged
#: chain on a spread-capped state space, built for the tail: sojourn.jsq_ps.solve.tail)
FAITHFUL_METHODS = ("A", "B", "C", "D", "E", "F")
CORRECTED_METHODS = tuple(m + "*" for m in FAITHFUL_METHODS)
ALL_METHODS = FAITHFUL_METHODS + CORRECTED_METHODS + ("exact", "T")

#: jsq_ps_methods.md §4 Table 4: L1 (mc_limit, chain truncation per server) for R = 1..10
TABLE4_L1 = {1: 22, 2: 22, 3: 22, 4: 13, 5: 7, 6: 5, 7: 4, 8: 3, 9: 3, 10: 2}
#: §4 "infty": the sum range / truncation L2 of the faithful methods
DEFAULT_L2 = 130

#: attributes of the coordinates every JSQ-PS dataset may carry (set on the merged files and the comparison)
COORD_ATTRS = {
    "service": {"long_name": "service-requirement law (a sojourn.laws spec string)"},
    "R": {"long_name": "number of servers", "units": "1"},
    "rho": {"long_name": "load Lambda/(R mu)", "units": "1"},
    "approximation": {
        "long_name": "approximation of the M/M/R-JSQ-PS sojourn-time CDF",
        "comment": "A-F: paper-faithful (Palmer & Martin-Perez 2022, section 3.7); A*-F*: the same "
        "with the reference notes' section 8.3 corrections; exact: the tagged-customer "
        "Markov chain (truncated); T: the tagged-customer chain on a spread-capped state "
        "space with a throughput-preserving boundary, conservative (sojourn.jsq_ps.solve.tail)",
    },
    "replication": {"long_name": "replication index (seed spawn key)", "units": "1"},
    "percentile": {"long_name": "percentile level", "units": "percent"},
    "t": {
        "long_name": "sojourn time (grid point)",
        "units": "time units (1/mu = mean service requirement scale of the spec)",
    },
    "n": {"long_name": "number of customers at the tagged customer's server", "units": "1"},
}


def label_coords(ds):
    """``ds`` with :data:`COORD_ATTRS` on the coordinates it has (in place; returned for chaining)."""
    for name, attrs in COORD_ATTRS.items():
        if name in ds.coords:
            ds[name].attrs = {**ds[name].attrs, **attrs}
    return ds


#: the service-law name of the M/M/R system (the one the approximations model)
EXPONENTIAL = "exponential"

#: the percentile level (percent) of a precision target ``statistic: percentile`` given without ``at``: the
#: project's one default (sojourn.core.checks.config)
from ..core.checks.config import DEFAULT_PERCENTILE  # noqa: E402,F401


def table4_L1(servers: int) -> int:
    """§4 Table 4 value; beyond R = 10 the inferred rule min(22, max{L : L^{2R} ≤ 1e9})."""
    if servers in TABLE4_L1:
        return TABLE4_L1[servers]
    if 2 * servers * math.log(3) > math.log(1e9) + 1:  # 3^(2R) > 1e9 by far (R >= 10): no powers of huge R
        return 2
    L = 2
    while (L + 1) ** (2 * servers) <= 1e9 and L + 1 <= 22:
        L += 1
    return L


def format_rho(rho, decimals: int) -> str:
    """A load as a fixed-decimal label (file names, cache keys): ``0.50``, never ``0.5000000001``."""
    return f"{float(rho):.{int(decimals)}f}"

#: corrected methods that are the same chain as another one (solve/methods.py docstring; reference §8.3): with
#: ``share_corrected`` only A* and C* are computed and copied to these names (and stored once in the blocks)
SHARED_CORRECTED = {"B*": "A*", "D*": "A*", "E*": "A*", "F*": "C*"}



def chain_bytes(L: int, servers: int) -> tuple[float, float]:
    """(states, bytes) of the analytic methods' chain on sorted occupancy vectors with per-server cap L:
    C(L+R-1, R) states of R entries each and a sparse generator of about R + 2 transitions per state; by
    logs, so that a huge R costs nothing to size."""
    log_states = math.lgamma(L + servers) - math.lgamma(servers + 1) - math.lgamma(L)
    states = math.exp(min(log_states, 700.0))
    return states, states * (8.0 * servers + 24.0 * (servers + 2))

