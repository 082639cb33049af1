"""Config helpers shared by the workflow and every study: the error type of cross-field checks and the
canonical form of config values passed to rules."""
from __future__ import annotations


class ConfigError(ValueError):
    """A config value that JSON schema cannot reject; the message starts with the key path."""


def canonical(value):
    """Recursively key-sorted copy of a config value, for ``params:``.

    Snakemake compares params by ``repr``, in which dict order shows: without this, the same settings
    written in another key order (e.g. a YAML dump) would rerun every job."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value
