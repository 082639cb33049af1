"""Model files: load a YAML model file (or a built-in example) into a validated, stable :class:`Network`.

The format is documented by :data:`sojourn.restart.schema.MODEL_SCHEMA` (``sojourn restart schema``); the
built-in examples of seed 001 are ``examples/example{1,2,3}.yaml`` next to this module.
"""
from __future__ import annotations

from pathlib import Path

from .model import Network, model_from_dict

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
#: the largest model file read (the examples are a few hundred bytes; a 300-phase PH matrix is about 1 MB)
MAX_MODEL_BYTES = 16 * 2**20


def load_model(path_or_name, check_stable: bool = True) -> Network:
    """A model file (YAML) or a built-in example name (``example1``, ``example2``, ``example3``).

    With ``check_stable`` the traffic equations are solved once and an unstable model (Σρ ≥ 1 at a
    queue) or a non-converging fixed point is rejected here, naming the queue.
    """
    p = Path(str(path_or_name))
    try:
        if not p.suffix and not p.exists() and (EXAMPLES_DIR / f"{p.name}.yaml").is_file():
            p = EXAMPLES_DIR / f"{p.name}.yaml"
        found = p.is_file()
    except (OSError, ValueError):  # a name the file system refuses (too long, a NUL): no such file
        found = False
    if not found:
        known = sorted(f.stem for f in EXAMPLES_DIR.glob("*.yaml"))
        raise ValueError(f"model must be a YAML model file or one of {known}; got {str(path_or_name)!r}")
    from ..core.checks.guard import load_yaml

    size = p.stat().st_size
    if size > MAX_MODEL_BYTES:
        raise ValueError(f"model file {p}: {size / 2**20:.0f} MiB, larger than a model file can be "
                         f"({MAX_MODEL_BYTES / 2**20:.0f} MiB)")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"model file {p}: not a text (YAML) file") from None
    d = load_yaml(text, f"model file {p}")  # duplicate keys and alias bombs refused (sojourn.core.checks.guard)
    net = model_from_dict(d)
    if check_stable:
        from .solve import solve

        solve(net)
    return net
