"""Files that are not regular files, made in a test's own folder (never the real /dev/null): a character device
(``mknod``, root only: the caller skips without it), a FIFO, a Unix socket, a folder, and symbolic links to them;
with the identity of each, to check after a command that it is still what it was."""
from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

#: the kinds :func:`make` knows, in the words of sojourn.core.files.integrity.not_regular
KINDS = {
    "device": "a character device",
    "fifo": "a FIFO (named pipe)",
    "socket": "a socket",
    "folder": "a folder",
    "link-to-device": "a symbolic link to a character device",
    "link-to-fifo": "a symbolic link to a FIFO (named pipe)",
}


def can_mknod(folder) -> bool:
    probe = Path(folder) / ".mknod-probe"
    try:
        os.mknod(probe, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        return False
    probe.unlink()
    return True


def make(path, kind: str):
    """Create ``kind`` (a key of :data:`KINDS`) at ``path``; returns what keeps it alive (a bound socket) or None."""
    path = Path(path)
    if kind == "device":  # a null device of our own (major 1, minor 3), as `mknod mynull c 1 3`
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        here = os.getcwd()
        os.chdir(path.parent)  # a relative name: a Unix socket's path is limited to 107 bytes
        try:
            s.bind(path.name)
        finally:
            os.chdir(here)
        return s
    elif kind == "folder":
        path.mkdir()
    elif kind.startswith("link-to-"):
        target = path.with_name(path.name + ".target")
        kept = make(target, kind[len("link-to-"):])
        path.symlink_to(target.name)
        return kept
    else:
        raise ValueError(kind)
    return None


def identity(path) -> tuple:
    """(type and mode, device numbers, inode) of ``path`` itself and, for a link, of its target."""
    st, lst = os.stat(path), os.lstat(path)
    return (stat.S_IFMT(lst.st_mode), lst.st_ino, stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino)


def kinds(folder) -> list[str]:
    """The kinds this process can make in ``folder`` (a device needs root)."""
    return [k for k in KINDS if "device" not in k or can_mknod(folder)]
