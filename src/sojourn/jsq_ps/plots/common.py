"""What every figure of the JSQ-PS study shares: the series and their styles, legends, number words."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ...core.estimates.reference import rule_words
from ...core.present.figures import (
    METHOD_COLORS,
    TIME_UNIT,
    method_color,
    save,  # noqa: F401 - the families call common.save (a test replaces it here)
)

FAITHFUL = ("A", "B", "C", "D", "E", "F")
_FAITHFUL_COLOR = {m: METHOD_COLORS[m] for m in FAITHFUL}
_EXACT_COLOR = METHOD_COLORS["exact"]
#: method T (sojourn.jsq_ps.solve.tail): its own colour and a dash-dot line in every figure that draws methods
TAIL = "T"
_TAIL_COLOR = METHOD_COLORS[TAIL]
TAIL_LABEL = "T (bound)"  # method T, apart from the sojourn time S: its survival lies on or above the true one
#: the families drawn as one line or mark ("best of A–F", "best of A*–F*"): shades of grey, never a colour of the
#: method palette (a colour means one method across the report: orange is B in the maps, so never "best of A*–F*");
#: each with the word a caption names it by
FAMILY_COLORS = {"faithful": "0.5", "corrected": "0.1"}
FAMILY_COLOR_WORDS = {"faithful": "grey", "corrected": "black"}
TIME_UNITS = f"{TIME_UNIT}, 1/μ"
EXPONENTIAL = "exponential"
#: Wasserstein distances to exact below this (mean service times) are drawn as a ▼ above the bottom edge of their panel
W_FLOOR = 1e-3
#: the legend entries of the two references
AGAINST_EXACT = "filled: against exact"
AGAINST_SIMULATION = "hollow: against the simulation (exact did not run)"
#: the Wasserstein figure's noise: a filled area (fill_between) in this colour, named so in its legend and caption
NOISE_FILL = "0.8"
NOISE_WORDS = "a grey area"
NOISE_LABEL = (f"{NOISE_WORDS.removeprefix('a ')}: the simulation's own noise, where a method is set against it (no "
               "method can look closer)")
RULE = rule_words("customers")


class Series:
    """One drawn line: a method, or a group of corrected methods whose results are identical (A*–F* reduce
    to two distinct chains, reference §8.3), drawn once under one label."""

    def __init__(self, members, color, style, lw=1.2, label=None):
        self.members, self.color, self.style, self.lw = list(members), color, style, lw
        self.method = self.members[0]
        self.label = label or " = ".join(self.members)


def tail_series() -> Series:
    """T's line: the same colour, style and label in every figure."""
    return Series([TAIL], _TAIL_COLOR, "-.", lw=1.8, label=TAIL_LABEL)


def series(cmp: xr.Dataset, family: str) -> list[Series]:
    """The lines of a family: ``faithful`` → A–F one each; ``corrected`` → A*–F* grouped by identical
    approximated percentiles over the whole grid, then ``exact`` and ``T`` (:func:`tail_series`)."""
    present = cmp["approximation"].values.tolist()
    if family == "faithful":
        return [Series([m], _FAITHFUL_COLOR[m], "-") for m in FAITHFUL if m in present]
    key = cmp["approx_percentile"] if "approx_percentile" in cmp else None
    groups: list[list[str]] = []
    for m in (x for x in present if x.endswith("*")):
        for g in groups:
            if key is not None and np.array_equal(key.sel(approximation=g[0]).values, key.sel(approximation=m).values,
                                                  equal_nan=True):
                g.append(m)
                break
        else:
            groups.append([m])
    out = [Series(g, method_color(g[0]), "--") for g in groups]
    if "exact" in present:
        out.append(Series(["exact"], _EXACT_COLOR, "-", lw=2.0))
    if TAIL in present:
        out.append(tail_series())
    return out


def _groups(cmp: xr.Dataset) -> tuple[dict, dict]:
    """method → its group's short name, the first member (B* → A* where A* = B* = D* = E*, see :func:`series`),
    and the groups of more than one method as {short name: "A* = B* = D* = E*"}."""
    out, joined = {}, {}
    for fam in ("faithful", "corrected"):
        for sr in series(cmp, fam):
            for m in sr.members:
                out[m] = sr.method
            if len(sr.members) > 1:
                joined[sr.method] = sr.label
    return out, joined


def _label(name: str, joined: dict) -> str:
    """A group's legend label: 'A* = B* = D* = E*', T's long name, or the method."""
    return joined.get(name) or (TAIL_LABEL if name == TAIL else name)


def _shown_R(Rv, most=5) -> np.ndarray:
    """At most ``most`` server counts, evenly spread from the first to the last (all of them if few)."""
    if len(Rv) <= most:
        return np.asarray(Rv)
    return np.asarray(Rv)[np.unique(np.round(np.linspace(0, len(Rv) - 1, most)).astype(int))]


def _shown_note(Rv, all_R) -> str:
    return "" if len(Rv) == len(all_R) else f"R = {', '.join(map(str, Rv))} of the {len(all_R)} that ran"


def _legend_entries(axes) -> tuple[list, list]:
    """(handles, labels) of every panel of ``axes``, each label once, in the order first seen."""
    handles, labels = [], []
    for ax in np.asarray(axes).flat:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    return handles, labels


def _balanced_ncol(n, choices=(4, 3, 5, 2)) -> int:
    """A legend's number of columns (of ``choices``, in order of preference) leaving the fewest empty slots in the
    last row (matplotlib fills column by column: even columns read as a table)."""
    return min(choices, key=lambda k: ((-n) % k, choices.index(k))) if n > 1 else 1


def _legend_below(fig, handles, labels, ncol=4, fontsize=8, y=0.0):
    """One legend under the figure with every entry (never over the data, never cut)."""
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, y), ncol=min(ncol, len(labels)),
                   frameon=False, fontsize=fontsize, handlelength=2.2, columnspacing=1.4)


#: why a method did not run at a cell, in every figure and caption (rounds 21–26: "over budget", "truncation cap"
#: and "state cap" named one thing): exact and the corrected chains refuse, before running, a chain whose state space
#: or predicted run time is beyond its cap
SKIP_SHORT = "over budget"
SKIP_DETAIL = "its state space or predicted run time beyond its cap"


def skip_reason(short=False) -> str:
    """Why a method did not run (∅, ▲, "not run"): "over budget", with what that means unless ``short``."""
    return SKIP_SHORT if short else f"{SKIP_SHORT}: {SKIP_DETAIL}"


def _rho_text(rhos) -> str:
    return ", ".join(f"{r:g}" for r in rhos)


def _cells_text(n) -> str:
    return f"{n} cell" + ("" if n == 1 else "s")


def _g(x, digits=2) -> str:
    """A positive number with ``digits`` significant digits, plainly (0.0031, 12, 0.25)."""
    if x is None or not np.isfinite(x):
        return "—"
    return f"{float(f'{x:.{digits}g}'):g}"


def _pct(x, digits=0, signed=True) -> str:
    """A relative value as '+12 %'."""
    return f"{100 * x:{'+' if signed else ''}.{digits}f} %"


def _rgb(color):
    from matplotlib.colors import to_rgb

    return np.array(to_rgb(color))



#: the corner dot of a map cell set against the simulation: large enough to see on a coloured cell, a white ring
_SIM_DOT = {"marker": "o", "ls": "none", "color": "0.1", "mec": "w", "mew": 1.2, "ms": 5.0}


def _message_panel(ax, text):
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9.5, wrap=True, transform=ax.transAxes,
            bbox={"facecolor": "0.96", "edgecolor": "0.7"})

