"""Config helpers shared by the config tests."""
from __future__ import annotations

import copy


def deep_update(a: dict, b: dict) -> None:
    """Merge ``b`` into ``a`` in place the way ``--configfile`` merges a file into the config: mappings key by
    key, any other value replaced (by a copy, so that test cases never share mutable values)."""
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(a.get(k), dict):
            deep_update(a[k], v)
        else:
            a[k] = copy.deepcopy(v)
