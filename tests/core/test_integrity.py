"""Sealed result files (sha256 sidecars): damage is detected, damaged cache entries are recomputed, files get
the umask's permissions. Pipeline-level repair (damaged blocks and merged files rebuilt by the next run) is in
tests/workflow/test_pipeline.py."""
from __future__ import annotations

import io
import os
import stat
import sys

import netCDF4
import numpy as np
import pytest
import xarray as xr

from sojourn.core.files import integrity
from sojourn.core.files.cache import cached_cells
from sojourn.core.files.io import read_netcdf, write_netcdf
from sojourn.core.runs.runner import Cell, store


def _ds(n=5, value=0):
    return xr.Dataset({"x": ("a", np.arange(n) + value)}, coords={"a": np.arange(n)},
                      attrs={"cell_keys": '{"0.50": "k"}', "cell_attrs": "{}"})


def _damage(path, how):
    path = str(path)
    if how == "truncated":
        os.truncate(path, os.path.getsize(path) // 3)
    elif how == "garbage":
        with open(path, "wb") as fh:
            fh.write(np.random.default_rng(0).bytes(4096))
    elif how == "altered":  # still a readable netCDF file, one value changed in place
        with netCDF4.Dataset(path, "a") as nc:
            v = nc.variables["x"]
            v[0] = v[0] + 1
    else:
        raise ValueError(how)


def test_written_files_are_sealed_and_check_ok(tmp_path):
    p = write_netcdf(_ds(), tmp_path / "a.nc")
    assert integrity.sidecar(p).is_file()
    assert integrity.check(p) == "ok"
    read_netcdf(p)  # reading changes nothing
    assert integrity.check(p) == "ok"


@pytest.mark.parametrize("how", ["truncated", "garbage", "altered"])
def test_damage_is_detected(tmp_path, how):
    p = write_netcdf(_ds(), tmp_path / "a.nc")
    _damage(p, how)
    reason = integrity.check(p)
    assert reason.startswith("sha256 ") and "differs" in reason


def test_unsealed_and_missing(tmp_path):
    p = tmp_path / "hand.nc"
    _ds().to_netcdf(p)
    assert integrity.check(p) == "unsealed"
    q = write_netcdf(_ds(), tmp_path / "gone.nc")
    q.unlink()
    assert integrity.check(q) == "missing"


def test_scan_moves_damaged_files_aside_and_leaves_the_rest(tmp_path):
    good = write_netcdf(_ds(), tmp_path / "blocks" / "good.nc")
    bad = write_netcdf(_ds(), tmp_path / "blocks" / "bad.nc")
    cached = write_netcdf(_ds(), tmp_path / "cache" / "c.nc")
    _damage(bad, "altered")
    _damage(cached, "garbage")  # the cache is checked when used, not by the scan
    assert [p for p, _ in integrity.scan(tmp_path, move=False)] == [bad]
    assert bad.exists()  # move=False only reports
    found = integrity.scan(tmp_path)
    assert [p for p, _ in found] == [bad]
    assert not bad.exists() and (tmp_path / "blocks" / "bad.nc.damaged").exists()
    assert not integrity.sidecar(bad).exists()
    assert good.exists() and integrity.check(good) == "ok" and cached.exists()
    assert integrity.scan(tmp_path) == []


def _select(ds, label):
    return ds


def _store(tmp_path):
    """A job's result stored the runner's way: the cache entry and the output, one file under two names."""
    cache = tmp_path / "cache"
    store(_ds(), cache, [Cell("0.50", "k")], 5, tmp_path / "block.nc")
    (entry,) = cache.glob("*.nc")
    return cache, entry


@pytest.mark.parametrize("how", ["truncated", "garbage", "altered", "unsealed"])
def test_damaged_cache_entries_are_reported_removed_and_not_used(tmp_path, how):
    cache, entry = _store(tmp_path)
    assert cached_cells(cache, {"0.50": "k"}, _select).keys() == {"0.50"}  # intact: used
    if how == "unsealed":
        integrity.sidecar(entry).unlink()
    else:
        _damage(entry, how)
    log = io.StringIO()
    assert cached_cells(cache, {"0.50": "k"}, _select, log=log) == {}
    assert f"cache entry {entry} not used" in log.getvalue() and "recomputed" in log.getvalue()
    assert not entry.exists()
    # the output is the same file: damage in place shows in its own checksum too (the next run's scan moves it
    # aside and rebuilds it); a lost sidecar of the entry leaves the output's intact
    assert (integrity.check(tmp_path / "block.nc") == "ok") == (how == "unsealed")


def test_each_result_is_stored_once_under_two_sealed_names(tmp_path):
    """The cache entry and the job's output are one inode (no second copy of the data), each name with its
    own sidecar; removing the output (Snakemake does before a rerun) leaves the entry."""
    cache, entry = _store(tmp_path)
    a, b = os.stat(entry), os.stat(tmp_path / "block.nc")
    assert (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) and a.st_nlink == 2
    assert integrity.check(entry) == integrity.check(tmp_path / "block.nc") == "ok"
    (tmp_path / "block.nc").unlink()
    assert integrity.check(entry) == "ok" and os.stat(entry).st_nlink == 1


def test_files_honour_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        for p in (write_netcdf(_ds(), tmp_path / "a.nc"), integrity.sidecar(tmp_path / "a.nc")):
            assert stat.S_IMODE(os.stat(p).st_mode) == 0o644, p
        os.umask(0o027)
        p = write_netcdf(_ds(), tmp_path / "b.nc")
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
    finally:
        os.umask(old)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_scan_reads_a_file_without_sidecar_and_moves_it_aside_when_damaged(tmp_path, how):
    """No sidecar to compare with (deleted, or never written): the scan reads the file in full; a truncated block
    whose sidecar was deleted used to pass it, then failed every merge with `NetCDF: HDF error`."""
    big = xr.Dataset({"x": (("a", "b"), np.random.default_rng(0).random((400, 300)))})  # several HDF5 chunks
    p = write_netcdf(big, tmp_path / "blocks" / "b.nc")
    _damage(p, how)
    integrity.sidecar(p).unlink()
    assert integrity.check(p) == "unsealed"
    assert integrity.readable(p).startswith("unreadable without a checksum")
    (found,) = integrity.scan(tmp_path, move=False)  # a dry run reports it and touches nothing
    assert found[0] == p and found[1].startswith("unreadable without a checksum") and p.exists()
    assert integrity.scan(tmp_path) == [found]
    assert not p.exists() and (tmp_path / "blocks" / "b.nc.damaged").exists()
    assert integrity.scan(tmp_path) == []


def test_scan_seals_a_sound_file_without_sidecar(tmp_path):
    p = write_netcdf(_ds(), tmp_path / "blocks" / "b.nc")
    integrity.sidecar(p).unlink()
    hand = tmp_path / "blocks" / "hand.nc"
    _ds(value=3).to_netcdf(hand)  # written without sojourn: no sidecar ever
    assert integrity.scan(tmp_path, move=False) == [] and not integrity.sidecar(p).exists()  # a dry run seals nothing
    heard = []
    assert integrity.scan(tmp_path, log=heard.append) == []
    assert integrity.check(p) == integrity.check(hand) == "ok"
    assert len(heard) == 2 and all("sealed anew" in h for h in heard)
    assert stat.S_IMODE(os.stat(integrity.sidecar(p)).st_mode) == integrity.file_mode()
    _damage(hand, "altered")  # from now on a change shows in its checksum
    assert [q for q, _ in integrity.scan(tmp_path)] == [hand]


# -- never onto what is not a regular file (issue 32, item 3): the writers' own refusal, behind the commands' and
# the pipeline's checks before compute (tests/workflow/test_special_outputs.py)
def _writers():
    import matplotlib.pyplot as plt

    from sojourn.core.present import figures, tables
    from sojourn.core.runs import job
    from sojourn.jsq_ps.accuracy import write_accuracy

    def log(path):  # a job's log
        job.run("sojourn.core.files.integrity:digest", path, path=__file__)

    return {
        "write_netcdf": lambda path: write_netcdf(_ds(), path),
        "store (cache entry and its link)": lambda path: store(_ds(), None, [Cell("0.50", "k")], 1, path),
        "write_atomic": lambda path: integrity.write_atomic(path, b"x"),
        "figure": lambda path: figures.save(plt.figure(), path.with_suffix(""), formats=("png",)),
        "table": lambda path: tables.write_table(path.with_suffix(""), "t", ["a"], [[1]]),
        "accuracy csv": lambda path: write_accuracy([], path),
        "job log": log,
    }


_CASES = [(w, "file") for w in _writers()] + [
    ("write_netcdf", "sidecar"),
    ("store (cache entry and its link)", "sidecar"),
]


@pytest.mark.parametrize("writer,which", _CASES, ids=[f"{w}-{x}" for w, x in _CASES])
def test_writers_never_replace_a_fifo(writer, which, tmp_path):
    names = {"figure": "out.png", "table": "out.csv", "accuracy csv": "out.csv", "job log": "out.log"}
    path = tmp_path / names.get(writer, "out.nc")
    target = path if which == "file" else integrity.sidecar(path)
    os.mkfifo(target)
    with pytest.raises(integrity.NotRegular, match=r"is a FIFO \(named pipe\), not a regular file; sojourn never "
                                                   "replaces one"):
        _writers()[writer](path)
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert sorted(os.listdir(tmp_path)) == [target.name]  # no temporary file left, nothing else written


def test_the_rename_itself_refuses(tmp_path):
    """seal checks again at its rename: a FIFO made after the temporary file was written is not replaced."""
    tmp = tmp_path / ".x.tmp"
    tmp.write_bytes(b"data")
    os.mkfifo(tmp_path / "x.nc")
    with pytest.raises(integrity.NotRegular):
        integrity.seal(tmp, tmp_path / "x.nc")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "x.nc").st_mode)


def test_special_files_lists_what_a_pipeline_must_not_write_over(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.mkfifo(tmp_path / "a" / "b" / "f.nc")
    (tmp_path / "a" / "ok.nc").write_text("")
    (tmp_path / "a" / "to-fifo.png").symlink_to("b/f.nc")
    (tmp_path / "a" / "to-folder").symlink_to("b")
    (tmp_path / "a" / "dangling.log").symlink_to("nowhere")
    found = {p.relative_to(tmp_path).as_posix(): what for p, what in integrity.special_files(tmp_path)}
    assert found == {"a/b/f.nc": "a FIFO (named pipe)", "a/to-fifo.png": "a symbolic link to a FIFO (named pipe)"}
    assert integrity.check(tmp_path / "a" / "b" / "f.nc") == "unsealed"  # never opened (it would block)
    integrity.sidecar(tmp_path / "a" / "ok.nc").symlink_to("b/f.nc")
    assert "is a symbolic link to a FIFO" in integrity.check(tmp_path / "a" / "ok.nc")


# -- damaged files end repaired or clearly stopped (issue 32, item 5; through Snakemake: tests/workflow/test_faults.py)
def _linked(tmp_path):
    """A results folder as the pipeline leaves it: a block that is a hard link of its sealed cache entry."""
    root = tmp_path / "study"
    cache = root / "cache" / "b"
    store(_ds(), cache, [Cell("0.50", "k")], 1, root / "blocks" / "b.nc")
    (entry,) = cache.glob("*.nc")
    return root, root / "blocks" / "b.nc", entry


def test_a_block_without_its_sidecar_is_judged_by_its_cache_entry(tmp_path):
    """Its cache entry is the same bytes with a checksum: sound, it vouches for the block (sealed anew without
    reading it); altered in place, it tells the change, which reading the file would not."""
    root, block, entry = _linked(tmp_path)
    integrity.sidecar(block).unlink()
    heard = []
    assert integrity.scan(root, log=heard.append) == []
    assert heard == [f"result {block} had no checksum; it matches its cache entry's checksum and is sealed anew"]
    assert integrity.check(block) == "ok"
    _damage(block, "altered")  # readable: read in full, it would pass
    integrity.sidecar(block).unlink()
    assert integrity.readable(block) == "ok"
    (found,) = integrity.scan(root)
    assert found[0] == block and found[1].startswith(f"its cache entry {entry} shares its bytes and does not match")
    assert not block.exists() and (block.parent / "b.nc.damaged").is_file()
    assert not entry.exists() and not integrity.sidecar(entry).exists()  # the same damaged bytes: discarded too


def test_a_damaged_block_takes_its_cache_entry_with_it(tmp_path):
    root, block, _ = _linked(tmp_path)
    _damage(block, "truncated")
    assert [p for p, _ in integrity.scan(root)] == [block]
    assert list((root / "cache").rglob("*.nc*")) == []
    assert integrity.set_aside_before(root) == [block]  # pending until its job writes it again
    store(_ds(), root / "cache" / "b", [Cell("0.50", "k")], 1, block)
    assert integrity.set_aside_before(root) == [] and integrity.check(block) == "ok"


def test_a_damaged_file_that_cannot_be_moved_aside_is_one_line(tmp_path, monkeypatch):
    root, block, _ = _linked(tmp_path)
    _damage(block, "altered")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(src))

    monkeypatch.setattr(integrity.os, "replace", refuse)
    with pytest.raises(integrity.Unmovable) as err:
        integrity.scan(root)
    assert str(err.value) == (f"damaged result {block} ({integrity.check(block)}) could not be moved aside to "
                              f"b.nc.damaged: Permission denied; make {block.parent} writable, or remove b.nc and its "
                              "b.nc.sha256 yourself, then rerun")
    assert block.exists()


def test_a_file_that_crashes_the_reader_is_damaged_not_a_crash(tmp_path, monkeypatch):
    """HDF5 segfaulted on some single bit flips: the scan reads an unsealed file in a child process."""
    crasher = tmp_path / "crash.sh"
    crasher.write_text("#!/bin/sh\nkill -SEGV $$\n")
    crasher.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(crasher))
    assert integrity.readable_apart(tmp_path / "x.nc") == ("unreadable without a checksum (reading it crashed the "
                                                             "netCDF library: signal SIGSEGV)")


def test_a_merge_names_an_input_that_does_not_hold_what_its_job_wrote(tmp_path):
    """A block altered while it had no checksum, sealed anew: the merge compares its cells with the ones its job
    wrote, sets it aside (with its cache entry) and names it in one line, writing nothing."""
    from sojourn.core.files.merge import merge_files

    root, block, entry = _linked(tmp_path)
    with netCDF4.Dataset(block, "a") as nc:
        nc.variables["a"][0] = 99
    integrity.reseal(block)
    out = root / "merged.nc"
    with pytest.raises(integrity.Inconsistent) as err:
        merge_files([block], out, stack=("a",), expect={str(block): {"a": [0, 1, 2, 3, 4]}})
    assert str(err.value) == (f"{block} holds a = 99, 1, 2, 3, 4 where its job wrote 0, 1, 2, 3, 4: damaged, although "
                              "it reads in full (its checksum was missing); moved aside to b.nc.damaged with its cache "
                              "entry: rerun to rebuild it")
    assert not block.exists() and not entry.exists() and not out.exists()
