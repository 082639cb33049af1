"""Restart study (seed 001): multi-class G-networks of processor-sharing queues with restart signals.

The roles every study has, under the same names: the validated network spec (:mod:`.model`; model files and
the built-in examples in :mod:`.files`, their schema in :mod:`.schema`), the numba simulation under signal and
timeout semantics (:mod:`.kernel`), one replication and the Python API (:mod:`.simulate`), the traffic equations,
product-form measures, the single-queue closed form and g* (:mod:`.solve`), the config checks and cells
(:mod:`.config`), every rule's entry point (:mod:`.jobs`), the sweep beside the product form (:mod:`.compare`),
the figures (:mod:`.plots`) and the commands (:mod:`.cli`). Its own: g* beside the simulated timeout optimum
(:mod:`.optimise`).

The names below are imported on first use (the simulator's API is :mod:`.simulate`: ``simulate``,
``simulate_replication``, ``concat_replications``, the same in every study).
"""
from __future__ import annotations

from ..core.exports import lazy

_EXPORTS = {
    "Network": ".model",
    "load_model": ".files",
    "simulate_replication": ".simulate",
    "concat_replications": ".simulate",
    "summary": ".simulate",
    "product_form": ".solve:solve",
    "optimal_signal_rate": ".solve",
    "FIGURES": ".plots",
    "optimise": ".optimise",
}

__all__ = [*_EXPORTS]
__getattr__ = lazy(__name__, _EXPORTS)
