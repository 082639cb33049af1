"""Integrity of result files: a sha256 of each file's bytes in a sidecar ``<file>.sha256``, checked on use.

Every netCDF file sojourn writes (block, cache entry, merged file, comparison) is *sealed*: the digest of
the complete file is written to the sidecar before the file is renamed into place, so a sealed file and
its sidecar agree unless the file was damaged or altered afterwards (truncated, overwritten with
garbage, values edited in place). Then:

* a cache entry that does not match is reported and recomputed (:func:`sojourn.core.cache.cached_cells`);
* at the start of a run, :func:`scan` moves aside every damaged result file (``<file>.damaged``), so that
  Snakemake sees it missing and rebuilds it and what depends on it — no manual deletion.

Files without a sidecar (written before sealing existed, or by hand) are left alone.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

SUFFIX = ".sha256"
_CHUNK = 1 << 20


def digest(path) -> str:
    """sha256 of the file's bytes (hex), read in 1 MB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def sidecar(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + SUFFIX)


def file_mode() -> int:
    """The mode a new file gets from open(): 0666 less the process umask (read from /proc, which,
    unlike os.umask, does not change the umask for other threads in between)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except OSError:
        pass
    return 0o644


def seal(tmp, final, known: str | None = None) -> str:
    """Write the sidecar of ``final`` for the (complete) file ``tmp``, then rename ``tmp`` to ``final``.

    The sidecar goes first: a crash in between leaves a mismatch, which is read as damage (a rebuild),
    never a damaged file that looks intact. ``tmp`` gets the umask's permissions (mkstemp makes 0600).
    ``known``: the file's digest when it is already known (a second name of a sealed file), else computed.
    """
    os.chmod(tmp, file_mode())
    d = known or digest(tmp)
    final = Path(final)
    side = sidecar(final)
    side_tmp = side.with_name(f".{side.name}.tmp")
    side_tmp.write_text(f"{d}  {final.name}\n")
    os.chmod(side_tmp, file_mode())
    os.replace(side_tmp, side)
    os.replace(tmp, final)
    return d


def recorded(path) -> str | None:
    """The digest a sealed file's sidecar records, or None (no sidecar, or an unreadable one)."""
    side = sidecar(path)
    if not side.exists():
        return None
    m = re.match(r"([0-9a-f]{64})\b", side.read_text())
    return m.group(1) if m else None


def check(path) -> str:
    """'ok', 'unsealed' (no sidecar) or a one-line reason why the file does not match its sidecar."""
    path = Path(path)
    side = sidecar(path)
    if not side.exists():
        return "unsealed"
    m = re.match(r"([0-9a-f]{64})\b", side.read_text())
    if not m:
        return f"its checksum file {side.name} is unreadable"
    if not path.exists():
        return "missing"
    got = digest(path)
    return "ok" if got == m.group(1) else f"sha256 {got[:12]}… differs from the recorded {m.group(1)[:12]}…"


def discard(path) -> None:
    """Remove a file and its sidecar (either may be missing)."""
    for p in (Path(path), sidecar(path)):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def scan(root, move: bool = True, exclude=("cache",)) -> list[tuple[Path, str]]:
    """Check every sealed ``*.nc`` under ``root`` (not under an ``exclude``d folder); with ``move``, rename
    each damaged one (and its sidecar) to ``<name>.damaged``. Returns [(path, reason)] of damaged files."""
    root = Path(root)
    bad = []
    if not root.is_dir():
        return bad
    for side in sorted(root.rglob("*.nc" + SUFFIX)):
        path = side.with_name(side.name[: -len(SUFFIX)])
        if any(part in exclude for part in path.relative_to(root).parts):
            continue
        reason = check(path)
        if reason in ("ok", "unsealed", "missing"):
            continue
        bad.append((path, reason))
        if move:
            os.replace(path, path.with_name(path.name + ".damaged"))
            side.unlink()
    return bad
