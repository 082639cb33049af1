"""No command and no pipeline run replaces what is not a regular file (issue 32, item 3).

Run as root, ``sojourn simulate … -o /dev/null`` used to replace the device with a regular file (and write
``/dev/null.sha256``); ``split-merge exact`` did the same. Now every command that writes refuses, before any
compute, an ``--output`` (or its checksum file ``<output>.sha256``) that is a device, a FIFO, a socket, a folder
or a link to one, in one line naming the flag; the pipeline refuses to start over such an entry in its results
folder; and the writers themselves never rename onto one (tests/core/test_integrity.py). Every special file here
is made in the test's own folder (tests/support/special.py), never the real /dev/null.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import sojourn.core.files.io as core_io
from sojourn.cli import build_parser, command_paths, main
from support import special

ROOT = Path(__file__).resolve().parents[2]
OUT = "{out}"

#: every command that writes a file, with a valid command line (small) around its output
WRITERS = {
    ("simulate",): ["simulate", "-R", "2", "--load", "0.5", "--horizon", "2000", "--warmup", "100", "--dt", "0.1",
                    "--t-max", "10", "--replications", "2", "-o", OUT],
    ("approximate",): ["approximate", "-R", "2", "--load", "0.5", "--method", "A", "--dt", "0.1", "--t-max", "10",
                       "-o", OUT],
    ("split-merge", "exact"): ["split-merge", "exact", "--hosts", "3", "--replicas", "3", "--quorum", "2", "--load",
                               "0.9", "-o", OUT],
    ("split-merge", "simulate"): ["split-merge", "simulate", "-n", "4", "-r", "2", "-q", "1", "--load", "0.5",
                                  "--workunits", "1000", "--replications", "2", "-o", OUT],
    ("split-merge", "best"): ["split-merge", "best", "-n", "4", "--arrival-rate", "1", "--workunits", "1000",
                              "--replications", "2", "-o", OUT],
    ("restart", "solve"): ["restart", "solve", "-m", "example1", "-o", OUT],
    ("restart", "simulate"): ["restart", "simulate", "-m", "example1", "--horizon", "2000", "--replications", "2",
                              "-o", OUT],
    ("restart", "optimise"): ["restart", "optimise", "-m", "example1", "--horizon", "2000", "--replications", "2",
                              "-o", OUT],
}
#: the same commands through Ciw's backend (its own route to the output)
CIW = [*WRITERS[("simulate",)][:-2], "--backend", "ciw", "-o", OUT]


def _has_output(path) -> bool:
    parser = build_parser(path[0])
    for name in path:
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        parser = sub.choices[name]
    return "--output" in parser._option_string_actions


def test_every_command_that_writes_is_covered():
    """A new command with --output must join WRITERS (and so every test below)."""
    writing = {tuple(p) for p in command_paths() if p and _has_output(p)}
    assert writing == set(WRITERS), writing ^ set(WRITERS)


@pytest.fixture
def no_compute(monkeypatch):
    """Compute and write functions that fail the test: the output is refused before them."""
    import sojourn.jsq_ps.simulate as jsq_simulate
    import sojourn.jsq_ps.solve.api as jsq_api
    import sojourn.restart.optimise as restart_optimise
    import sojourn.restart.simulate as restart_simulate
    import sojourn.restart.solve as restart_solve
    import sojourn.split_merge.best as sm_best
    import sojourn.split_merge.simulate as sm_simulate
    import sojourn.split_merge.solve as sm_solve

    def forbidden(*a, **k):
        raise AssertionError("computed or wrote although the output is refused")

    for module, name in ((jsq_simulate, "simulate"), (jsq_api, "approximate"), (core_io, "write_netcdf"),
                         (sm_simulate, "simulate"), (sm_solve, "exact_dataset"), (sm_best, "best"),
                         (restart_simulate, "simulate"), (restart_optimise, "optimise"), (restart_solve, "solve")):
        monkeypatch.setattr(module, name, forbidden)


def _argv(argv, out):
    return [str(out) if a == OUT else a for a in argv]


@pytest.mark.parametrize("kind", list(special.KINDS))
@pytest.mark.parametrize("command", [*WRITERS.values(), CIW], ids=[" ".join(k) for k in WRITERS] + ["simulate-ciw"])
def test_output_onto_a_special_file_is_refused_before_compute(command, kind, tmp_path, capsys, no_compute):
    if "device" in kind and not special.can_mknod(tmp_path):
        pytest.skip("mknod needs root")
    target = tmp_path / "out.nc"
    keep = special.make(target, kind)
    before = special.identity(target), sorted(os.listdir(tmp_path))
    rc = main(_argv(command, target))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"error: --output {target}: is {special.KINDS[kind]}" in err, err  # a folder: "…; give a file name"
    assert (special.identity(target), sorted(os.listdir(tmp_path))) == before  # intact, nothing written beside it
    if keep is not None:
        keep.close()


@pytest.mark.parametrize("command", [WRITERS[("simulate",)], WRITERS[("split-merge", "exact")],
                                     WRITERS[("restart", "solve")]], ids=["simulate", "split-merge exact",
                                                                          "restart solve"])
def test_a_checksum_file_that_is_a_fifo_is_refused_too(command, tmp_path, capsys, no_compute):
    target = tmp_path / "out.nc"
    special.make(tmp_path / "out.nc.sha256", "fifo")
    before = special.identity(tmp_path / "out.nc.sha256")
    assert main(_argv(command, target)) == 2
    err = capsys.readouterr().err
    assert f"--output {target}: its checksum file {target}.sha256 is a FIFO (named pipe), not a regular file" in err
    assert special.identity(tmp_path / "out.nc.sha256") == before and not target.exists()


def test_console_script_onto_a_device_of_its_own(tmp_path):
    """The issue's case as typed: `mknod mynull c 1 3; sojourn simulate C -o mynull` (and split-merge exact)."""
    if not special.can_mknod(tmp_path):
        pytest.skip("mknod needs root")
    for command in (WRITERS[("simulate",)], WRITERS[("split-merge", "exact")]):
        special.make(tmp_path / "mynull", "device")
        before = special.identity(tmp_path / "mynull")
        r = subprocess.run([sys.executable, "-m", "sojourn.cli", *_argv(command, "mynull")], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300, check=False)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.strip().endswith("error: --output mynull: is a character device, not a regular file; sojourn "
                                         "never replaces one: give the name of a new or a regular file"), r.stderr
        assert special.identity(tmp_path / "mynull") == before
        assert sorted(os.listdir(tmp_path)) == ["mynull"]
        (tmp_path / "mynull").unlink()


def test_a_symbolic_link_to_a_regular_file_is_still_written(tmp_path, capsys):
    """What stays allowed: a link to a regular file is replaced by the result (the link, never its target)."""
    target = tmp_path / "old.nc"
    target.write_text("old\n")
    (tmp_path / "out.nc").symlink_to("old.nc")
    assert main(_argv(WRITERS[("restart", "solve")], tmp_path / "out.nc")) == 0, capsys.readouterr().err
    assert (tmp_path / "out.nc").is_file() and not (tmp_path / "out.nc").is_symlink()
    assert target.read_text() == "old\n"


# -- the pipeline -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,where", [("fifo", "jsq_ps/simulation.nc"), ("socket", "jsq_ps/logs/compare.log"),
                                        ("device", "jsq_ps/figures/x.png"),
                                        ("link-to-fifo", "jsq_ps/blocks/approximation/R~1/rho~0.3.nc.sha256")])
def test_the_pipeline_refuses_to_start_over_a_special_file_in_its_results(kind, where, tmp_path):
    """A special file anywhere under a study's results folder: the run stops before any job, in one line naming
    it, and leaves it as it was; a dry run only warns."""
    if "device" in kind and not special.can_mknod(tmp_path):
        pytest.skip("mknod needs root")
    path = tmp_path / "results" / where
    path.parent.mkdir(parents=True)
    keep = special.make(path, kind)
    before = special.identity(path)
    cfg = tmp_path / "only_jsq.yaml"
    cfg.write_text(yaml.safe_dump({"split_merge": {"enabled": False}, "restart": {"enabled": False}}))
    base = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
            "--cores", "1", "--configfile", str(ROOT / "config" / "test.yaml"), str(cfg)]
    r = subprocess.run(base, capture_output=True, text=True, cwd=tmp_path, timeout=600, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    line = next(x for x in out.splitlines() if "not a regular file" in x)
    assert f"{path.relative_to(tmp_path)} is {special.KINDS[kind]}, not a regular file" in line, out[-3000:]
    assert "never replaces one" in line and "rule " not in out and "Traceback" not in out, out[-3000:]
    assert special.identity(path) == before
    dry = subprocess.run([*base, "-n"], capture_output=True, text=True, cwd=tmp_path, timeout=600, check=False)
    assert dry.returncode == 0 and "sojourn: warning: results:" in dry.stderr, dry.stderr[-3000:]
    assert special.identity(path) == before
    if keep is not None:
        keep.close()
