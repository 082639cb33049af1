"""Integrity of result files: a sha256 of each file's bytes in a sidecar ``<file>.sha256``, checked on use.

Every netCDF file sojourn writes (block, cache entry, merged file, comparison) is *sealed*: the digest of
the complete file is written to the sidecar before the file is renamed into place, so a sealed file and
its sidecar agree unless the file was damaged or altered afterwards (truncated, overwritten with
garbage, values edited in place). Then:

* a cache entry that does not match is reported and recomputed (:func:`sojourn.core.files.cache.cached_cells`);
* at the start of a run, :func:`scan` moves aside every damaged result file (``<file>.damaged``), so that
  Snakemake sees it missing and rebuilds it and what depends on it — no manual deletion.

A result file without a sidecar (written before sealing existed, its sidecar deleted, or copied without it) has
nothing to compare with: :func:`scan` reads it in full (:func:`readable`: every variable through netCDF4/HDF5,
which fails on a truncated or overwritten file) and seals it anew when it reads, or moves it aside when not.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import threading
from pathlib import Path

#: held around every netCDF access of sojourn (HDF5 is not thread-safe); here, below core.files.io, because the scan
#: reads files too (core.files.io re-exports it)
NETCDF_LOCK = threading.RLock()

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


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def not_regular(path) -> str | None:
    """What ``path`` is when it exists and is not a regular file — "a folder", "a FIFO (named pipe)", "a socket",
    "a character device", "a block device", or "a symbolic link to" one of these — else None (nothing there, a
    regular file, a symbolic link to one, or a dangling link: a rename replaces a link, never its target)."""
    try:
        st = os.stat(path)  # follows a symbolic link
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:  # a link loop, a permission problem: not something to write over either
        return f"unusable ({exc.strerror or exc})"
    if stat.S_ISREG(st.st_mode):
        return None
    what = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
    return f"a symbolic link to {what}" if os.path.islink(path) else what


class NotRegular(OSError):
    """A write that would have replaced what is not a regular file (a device, a FIFO, a socket, a folder)."""

    def __init__(self, path, what: str):
        super().__init__(errno.EEXIST, f"is {what}, not a regular file; sojourn never replaces one", str(path))

    def __str__(self) -> str:
        return f"{self.filename} {self.strerror}"


def replaceable(path) -> Path:
    """``path`` if a file may be renamed onto it (:func:`not_regular` is None), else :class:`NotRegular`. Every
    writer of sojourn calls it just before its rename (defence in depth: the commands and the pipeline refuse such
    a path before any compute, :func:`sojourn.core.checks.inputs.check_output`, :func:`special_files`)."""
    what = not_regular(path)
    if what is not None:
        raise NotRegular(path, what)
    return Path(path)


def write_atomic(path, data: bytes) -> Path:
    """``data`` written to ``path`` atomically: a temporary file in the same folder (the umask's permissions),
    then a rename — never onto what is not a regular file (:func:`replaceable`). Not sealed (no sidecar)."""
    import tempfile

    path = replaceable(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, file_mode())
        os.replace(tmp, replaceable(path))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def special_files(root) -> list[tuple[Path, str]]:
    """[(path, what)] of every entry under the folder ``root`` that is neither a regular file nor a folder (nor a
    symbolic link to one): FIFOs, sockets, devices, links to them (:func:`not_regular`). A pipeline writes its
    results under ``root`` and must find none there (the Snakefile refuses to start). Links to folders are not
    followed."""
    root = Path(root)
    out = []
    if not root.is_dir():
        return out
    for folder, dirs, files in os.walk(root):
        for name in sorted(files) + [d for d in sorted(dirs) if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder) / name
            what = not_regular(path)
            if what is not None and what not in ("a folder", "a symbolic link to a folder"):
                out.append((path, what))
    return out


def seal(tmp, final, known: str | None = None) -> str:
    """Write the sidecar of ``final`` for the (complete) file ``tmp``, then rename ``tmp`` to ``final``.

    The sidecar goes first: a crash in between leaves a mismatch, which is read as damage (a rebuild),
    never a damaged file that looks intact. ``tmp`` gets the umask's permissions (mkstemp makes 0600).
    ``known``: the file's digest when it is already known (a second name of a sealed file), else computed.
    """
    final = replaceable(final)
    replaceable(sidecar(final))
    os.chmod(tmp, file_mode())
    d = known or digest(tmp)
    try:
        write_atomic(sidecar(final), f"{d}  {final.name}\n".encode())
    except OSError as exc:
        full = no_space(exc, final)
        if full is not None:
            raise full from exc
        raise
    os.replace(tmp, replaceable(final))
    return d


def _recorded_text(side: Path) -> str | None:
    """The text of the sidecar ``side``, or None when there is none; never opens what is not a regular file (a
    FIFO would block the read)."""
    if not side.exists():
        return None
    what = not_regular(side)
    if what is not None:
        raise NotRegular(side, what)
    return side.read_text()


def recorded(path) -> str | None:
    """The digest a sealed file's sidecar records, or None (no sidecar, or an unreadable one)."""
    try:
        text = _recorded_text(sidecar(path))
    except NotRegular:
        return None
    m = re.match(r"([0-9a-f]{64})\b", text) if text is not None else None
    return m.group(1) if m else None


def check(path) -> str:
    """'ok', 'unsealed' (no sidecar) or a one-line reason why the file does not match its sidecar."""
    path = Path(path)
    side = sidecar(path)
    try:
        text = _recorded_text(side)
    except NotRegular as exc:
        return f"its checksum file {side.name} {exc.strerror}"
    if text is None:
        return "unsealed"
    m = re.match(r"([0-9a-f]{64})\b", text)
    if not m:
        return f"its checksum file {side.name} is unreadable"
    if not path.exists():
        return "missing"
    what = not_regular(path)
    if what is not None:
        return f"it is {what}, not a regular file"
    got = digest(path)
    return "ok" if got == m.group(1) else f"sha256 {got[:12]}… differs from the recorded {m.group(1)[:12]}…"


class NoSpace(OSError):
    """A write that failed because the device (or the user's quota) is full: one line, naming the file."""

    def __init__(self, path):
        super().__init__(errno.ENOSPC, "no space left on device", str(path))

    def __str__(self) -> str:
        return f"no space left on device: {self.filename}"


def no_space(exc: BaseException, path, need: float = 0.0) -> NoSpace | None:
    """A :class:`NoSpace` for ``path`` if ``exc`` (a failed write of ``path``) came from a full device, else
    None. Told by errno ENOSPC/EDQUOT anywhere in the exception's chain, or — HDF5 reports a failed write as
    "NetCDF: HDF error" without the errno — by the free space left in ``path``'s folder being below ``need``
    bytes (what the write still needed, e.g. the data's uncompressed size). Call before removing the partial
    file: that frees the space again."""
    seen, e = set(), exc
    while e is not None and id(e) not in seen:
        if isinstance(e, NoSpace):
            return e
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return NoSpace(path)
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    try:
        st = os.statvfs(Path(path).parent)
    except OSError:
        return None
    return NoSpace(path) if st.f_bavail * st.f_frsize < need else None


def release(path) -> int:
    """Point every descriptor this process still holds on ``path`` at /dev/null; returns how many.

    HDF5 keeps a file open whose write failed while flushing a compressed chunk (a full device): the descriptor
    outlived the file's removal, its space stayed taken, and the next file HDF5 created there failed with a
    PermissionError. Closing the descriptor would let HDF5, which still owns its number, write into whatever
    file reuses it; /dev/null in its place frees the space and leaves HDF5 a harmless target. Linux (/proc)."""
    target = os.path.realpath(path)
    n = 0
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for fd in fds:
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link in (target, target + " (deleted)"):
            null = os.open(os.devnull, os.O_RDWR)
            try:
                os.dup2(null, int(fd))
                n += 1
            finally:
                os.close(null)
    return n


def readable(path) -> str:
    """'ok' when every variable of the netCDF file ``path`` reads in full, else a one-line reason (what the
    netCDF/HDF5 library said). Reads the data, not only the header: a truncated file often opens. In this
    process: see :func:`readable_apart` for a file that may be damaged."""
    import netCDF4

    def walk(group):
        for var in group.variables.values():
            var.set_auto_maskandscale(False)
            var[...]
        for sub in group.groups.values():
            walk(sub)

    try:
        with NETCDF_LOCK, netCDF4.Dataset(path, "r") as nc:
            walk(nc)
    except Exception as exc:  # OSError (HDF error), RuntimeError, IndexError …: any failure is damage
        return f"unreadable without a checksum ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    return "ok"


#: seconds a child process may take to read a file without a checksum in full (:func:`readable_apart`)
READ_APART_SECONDS = 600.0


def readable_apart(path, timeout: float = READ_APART_SECONDS) -> str:
    """:func:`readable` in a child process: HDF5 can crash on a damaged file (a segmentation fault, seen with
    single bit flips), which in the process that runs the pipeline would end the run without a word. A child
    that crashes or does not finish within ``timeout`` seconds means the file is damaged."""
    import signal
    import subprocess
    import sys

    code = "import sys; from sojourn.core.files.integrity import readable; print(readable(sys.argv[1]))"
    try:
        r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=timeout,
                           check=False)
    except subprocess.TimeoutExpired:
        return f"unreadable without a checksum (reading it did not finish within {timeout:g} s)"
    lines = r.stdout.strip().splitlines()
    if r.returncode == 0 and lines:
        return lines[-1]
    how = (f"signal {signal.Signals(-r.returncode).name}" if r.returncode < 0 and -r.returncode in
           signal.valid_signals() else f"exit status {r.returncode}")
    return f"unreadable without a checksum (reading it crashed the netCDF library: {how})"


def reseal(path) -> str:
    """Write a new sidecar for the (verified) file ``path`` in place; returns its digest."""
    path = Path(path)
    d = digest(path)
    write_atomic(sidecar(path), f"{d}  {path.name}\n".encode())
    return d


def discard(path) -> None:
    """Remove a file and its sidecar (either may be missing)."""
    for p in (Path(path), sidecar(path)):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


class Unmovable(OSError):
    """A damaged result file that could not be moved aside (a read-only folder, …): one line saying what to do."""

    def __init__(self, path, reason: str, exc: OSError):
        self.path, self.reason = Path(path), reason
        super().__init__(exc.errno, exc.strerror or str(exc), str(path))

    def __str__(self) -> str:
        return (f"damaged result {self.path} ({self.reason}) could not be moved aside to {self.path.name}.damaged: "
                f"{self.strerror}; make {self.path.parent} writable, or remove {self.path.name} and its "
                f"{self.path.name}{SUFFIX} yourself, then rerun")


class Inconsistent(RuntimeError):
    """An input that reads in full but does not hold what its job wrote (damaged while it had no checksum): it has
    been set aside (:func:`set_aside`), so that the next run rebuilds it. One line."""

    def __init__(self, path, what: str, aside):
        self.path, self.aside = Path(path), Path(aside)
        super().__init__(f"{path} {what}: damaged, although it reads in full (its checksum was missing); moved aside "
                         f"to {self.aside.name} with its cache entry: rerun to rebuild it")


def linked_entries(root, folders=("cache",)) -> dict[tuple[int, int], list[Path]]:
    """{(device, inode): [paths]} of the ``*.nc`` files under ``root``'s ``folders`` (the cache) that have another
    name: a result stored once under two sealed names (:func:`sojourn.core.runs.runner.store`: a job's output is a hard
    link to its cache entry)."""
    out: dict = {}
    for folder in folders:
        base = Path(root) / folder
        for path in sorted(base.rglob("*.nc")) if base.is_dir() else []:
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if st.st_nlink > 1 and stat.S_ISREG(st.st_mode):
                out.setdefault((st.st_dev, st.st_ino), []).append(path)
    return out


def _twins(path, linked: dict) -> list[Path]:
    try:
        st = os.lstat(path)
    except OSError:
        return []
    return [p for p in linked.get((st.st_dev, st.st_ino), []) if p != Path(path)] if st.st_nlink > 1 else []


def vouched(path, linked: dict) -> str | None:
    """What the sealed other names of ``path`` (its cache entries, :func:`linked_entries`) say of its bytes: 'ok'
    when one's checksum matches, the reason when one's does not (the bytes they share changed after sealing), or
    None when no other name has a checksum to compare with."""
    for twin in _twins(path, linked):
        state = check(twin)
        if state == "ok":
            return "ok"
        if state not in ("unsealed", "missing"):
            return f"its cache entry {twin} shares its bytes and does not match its checksum: {state}"
    return None


def set_aside(path, reason: str, linked: dict | None = None) -> Path:
    """Move the damaged ``path`` to ``<name>.damaged`` (a folder may hold a file of that name from before: it is
    replaced), remove its sidecar, and discard its cache entries (:func:`linked_entries`: the same damaged bytes
    under another name), so that its job recomputes it. :class:`Unmovable` (one line saying what to do) when the
    file cannot be moved. Returns where it went."""
    path = Path(path)
    twins = _twins(path, linked or {})
    aside = path.with_name(path.name + ".damaged")
    try:
        os.replace(path, replaceable(aside))
        sidecar(path).unlink(missing_ok=True)
        for twin in twins:
            discard(twin)
    except NotRegular:
        raise
    except OSError as exc:
        raise Unmovable(path, reason, exc) from None
    return aside


def set_aside_before(root, exclude=("cache",)) -> list[Path]:
    """The result files under ``root`` that an earlier run set aside as damaged (:func:`set_aside`) and that have
    not been rebuilt since: ``<name>.damaged`` is there, ``<name>`` is not."""
    root = Path(root)
    out = []
    for aside in sorted(root.rglob("*.nc.damaged")) if root.is_dir() else []:
        path = aside.with_name(aside.name[: -len(".damaged")])
        if not any(part in exclude for part in path.relative_to(root).parts) and not os.path.lexists(path):
            out.append(path)
    return out


def scan(root, move: bool = True, exclude=("cache",), log=None) -> list[tuple[Path, str]]:
    """Check every ``*.nc`` result file under ``root`` (not under an ``exclude``d folder): a sealed one against
    its sidecar; one without a sidecar against its cache entry when it has one (:func:`vouched`: the same bytes
    under a second sealed name), else by reading it in full in a child process (:func:`readable_apart`). With
    ``move``, set each damaged one aside (:func:`set_aside`: renamed ``<name>.damaged``, its sidecar and cache
    entries removed; :class:`Unmovable` if it cannot be) and seal anew each unsealed one that passed; ``log(text)``
    hears of the latter (and of a folder where it could not be sealed). Returns [(path, reason)] of the damaged
    files."""
    root = Path(root)
    bad = []
    if not root.is_dir():
        return bad
    linked = linked_entries(root, exclude)
    for path in sorted(root.rglob("*.nc")):
        if any(part in exclude for part in path.relative_to(root).parts) or not path.is_file():
            continue
        reason = check(path)
        if reason == "unsealed":
            reason = vouched(path, linked)
            how = "it matches its cache entry's checksum" if reason == "ok" else "it reads in full"
            if reason is None:
                reason = readable_apart(path)
            if reason == "ok":
                if move:
                    try:
                        reseal(path)
                    except OSError as exc:
                        if log is not None:
                            log(f"result {path} has no checksum ({how}) and could not be sealed anew: "
                                f"{exc.strerror or exc}; it is read again by the next run")
                        continue
                    if log is not None:
                        log(f"result {path} had no checksum; {how} and is sealed anew")
                continue
        if reason in ("ok", "missing"):
            continue
        bad.append((path, reason))
        if move:
            set_aside(path, reason, linked)
    return bad
