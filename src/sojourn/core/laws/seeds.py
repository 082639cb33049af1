"""Random streams derived from the identity of a replication, never from execution order.

Every stream is ``numpy.random.SeedSequence(entropy=[base_seed, spec_hash], spawn_key=(replication,))``
(NumPy's parallel-streams recipe, doc/source/reference/random/parallel.rst): it equals child
``replication`` of ``SeedSequence([base_seed, spec_hash]).spawn(...)``, so replication k gives the same
numbers whether it runs alone, in a batch, in another process or in another order.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..checks.validate import integer_at_least


def spec_hash(spec) -> int:
    """Stable 64-bit integer hash of the spec's canonical JSON (first 8 bytes of its SHA-256): its ``seed_json()``
    where it has one (the form its streams were first derived from, kept when a field is renamed), else
    ``to_json()``."""
    text = spec if isinstance(spec, str) else getattr(spec, "seed_json", spec.to_json)()
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def seed_entropy(base_seed, spec) -> list[int]:
    """The entropy of every stream of this (seed, spec): ``[base_seed, spec_hash(spec)]``."""
    return [integer_at_least("seed", base_seed, 0, allow_float=False), spec_hash(spec)]


def replication_seed_sequence(base_seed, spec, replication) -> np.random.SeedSequence:
    """The SeedSequence of replication ``replication`` of ``spec`` under ``base_seed``."""
    return np.random.SeedSequence(
        entropy=seed_entropy(base_seed, spec),
        spawn_key=(integer_at_least("replication", replication, 0, allow_float=False),),
    )


BIT_GENERATORS = {"pcg64": np.random.PCG64, "sfc64": np.random.SFC64}


def replication_rng(base_seed, spec, replication, bit_generator="pcg64") -> np.random.Generator:
    """A Generator on :func:`replication_seed_sequence`: PCG64 (NumPy's default), or SFC64 for kernels that
    step it inline (:mod:`sojourn.core.laws.sfc64`)."""
    return np.random.Generator(BIT_GENERATORS[bit_generator](replication_seed_sequence(base_seed, spec, replication)))


def python_seed(seq: np.random.SeedSequence) -> int:
    """A 128-bit integer from ``seq`` for seeding Python's ``random`` (Ciw)."""
    words = seq.generate_state(4, dtype=np.uint32)
    return int(sum(int(w) << (32 * i) for i, w in enumerate(words)))
