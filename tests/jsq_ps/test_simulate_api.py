"""simulate API: dataset layout, determinism and seeds, exact-vs-general kernel law, validation, CLI."""
import concurrent.futures as cf
import json
import multiprocessing as mp

import numpy as np
import pytest
import xarray as xr
from scipy import stats as st

from sojourn import JSQPS, Exponential, Lognormal
from sojourn.cli import main
from sojourn.core.checks.timegrid import grid_size as n_bins
from sojourn.core.estimates.stats import cdf_from_histogram, quantile
from sojourn.core.files.io import read_netcdf, write_netcdf
from sojourn.core.laws.seeds import replication_seed_sequence, spec_hash
from sojourn.jsq_ps.simulate import concat_replications, simulate, simulate_many, simulate_replication

SMALL = dict(horizon=4_000.0, warmup=200.0, dt=0.125, t_max=40.0, occupancy_max=20)


def _strip(ds, guard=False):
    """Drop what legitimately differs between two identical runs: wall time, and the git commit (other
    engineers commit while the suite runs); with ``guard``, the run-length verdict too (it judges the run's
    replication count, which differs between a replication alone and the batch it belongs to)."""
    from sojourn.core.estimates.runlength import VARIABLES

    out = ds.drop_vars(["wall_time", *(VARIABLES if guard else ())])
    out.attrs = {k: v for k, v in out.attrs.items() if k != "git_commit"}
    return out


# -- layout ---------------------------------------------------------------------------------
def test_dataset_layout_and_attrs():
    spec = JSQPS.from_rho(3, 0.7)
    ds = simulate(spec, replications=2, seed=5, **SMALL)
    assert dict(ds.sizes) == {"replication": 2, "t": n_bins(40.0, 0.125), "n": 21}
    assert n_bins(182.32, 0.01) == 18233  # the paper's grid 0, 0.01, …, 182.32
    np.testing.assert_allclose(ds["t"].values[[0, 1, -1]], [0.0, 0.125, 40.0])
    for name, dims, kind in [("count", ("replication", "t"), "i"), ("overflow", ("replication",), "i"),
                             ("n_customers", ("replication",), "i"), ("mean", ("replication",), "f"),
                             ("max", ("replication",), "f"), ("sum", ("replication",), "f"),
                             ("sumsq", ("replication",), "f"), ("occupancy_at_arrival", ("replication", "n"), "i"),
                             ("mean_number_per_server", ("replication",), "f"), ("wall_time", ("replication",), "f")]:
        assert ds[name].dims == dims and ds[name].dtype.kind == kind, name
        assert "units" in ds[name].attrs and "long_name" in ds[name].attrs, name
    assert ds["count"].dtype == np.int64
    n = ds["n_customers"].values
    np.testing.assert_array_equal(ds["count"].sum("t").values + ds["overflow"].values, n)
    np.testing.assert_array_equal(ds["occupancy_at_arrival"].sum("n").values, n)
    np.testing.assert_allclose(ds["mean"].values, ds["sum"].values / n)
    assert (ds["max"].values >= ds["mean"].values).all()
    assert JSQPS.from_dict(json.loads(ds.attrs["spec"])) == spec
    assert ds.attrs["seed_entropy"] == json.dumps([str(5), str(spec_hash(spec))])
    assert ds.attrs["kernel"] == "exponential" and ds.attrs["backend"] == "fast"
    assert ds.attrs["Conventions"].startswith("CF")


def test_netcdf_roundtrip(tmp_path):
    ds = simulate(JSQPS.from_rho(2, 0.5), replications=2, **SMALL)
    back = read_netcdf(write_netcdf(ds, tmp_path / "sim.nc"))
    xr.testing.assert_identical(back, ds)


# -- determinism ----------------------------------------------------------------------------
SPECS = [JSQPS.from_rho(3, 0.8), JSQPS.from_rho(3, 0.8, service="lognormal", dispatch="jsq-d", choices=2)]


@pytest.mark.parametrize("spec", SPECS, ids=["mm3", "lognormal-jsq2"])
def test_same_seed_bit_identical_and_replication_alone_equals_batch(spec):
    a = simulate(spec, replications=3, seed=9, **SMALL)
    b = simulate(spec, replications=3, seed=9, **SMALL)
    xr.testing.assert_identical(_strip(a), _strip(b))
    alone = simulate_replication(spec, 2, 9, **SMALL)
    xr.testing.assert_identical(_strip(alone, True), _strip(a.isel(replication=[2]), True))
    offset = simulate(spec, replications=2, seed=9, replication_offset=1, **SMALL)
    xr.testing.assert_identical(_strip(offset, True), _strip(a.isel(replication=[1, 2]), True))
    joined = concat_replications([simulate_replication(spec, k, 9, **SMALL) for k in (2, 0, 1)])
    xr.testing.assert_identical(_strip(joined), _strip(a))
    other = simulate(spec, replications=3, seed=10, **SMALL)
    assert not np.array_equal(other["count"].values, a["count"].values)
    assert not np.array_equal(a["count"].values[0], a["count"].values[1])


def _rep_in_process(k):
    return _strip(simulate_replication(SPECS[1], k, 9, **SMALL))


def test_replications_in_other_processes_and_order():
    batch = _strip(simulate(SPECS[1], replications=3, seed=9, **SMALL))
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
        parts = list(pool.map(_rep_in_process, [2, 1, 0]))
    xr.testing.assert_identical(concat_replications(parts), batch)


@pytest.mark.parametrize("spec", SPECS, ids=["mm3", "lognormal-jsq2"])
def test_replications_in_threads_equal_one_after_the_other(spec):
    """The fast backend's threads (nogil kernels, sojourn.core.runs.threads) change nothing but the wall time: each
    replication draws from its own stream, in its own arrays, and the results come back in replication order."""
    serial = simulate_many([spec, SPECS[0]], replications=5, seed=3, max_workers=1, **SMALL)
    threads = simulate_many([spec, SPECS[0]], replications=5, seed=3, max_workers=3, **SMALL)
    for a, b in zip(serial, threads, strict=True):
        xr.testing.assert_identical(_strip(a), _strip(b))


def test_seed_sequence_recipe():
    spec = SPECS[0]
    ss = replication_seed_sequence(4, spec, 7)
    root = np.random.SeedSequence([4, spec_hash(spec)])
    np.testing.assert_array_equal(ss.generate_state(4), root.spawn(8)[7].generate_state(4))
    assert spec_hash(spec) == spec_hash(JSQPS.from_dict(spec.to_dict()))
    assert spec_hash(spec) != spec_hash(SPECS[1])


def test_concat_rejects_mismatch_and_duplicates():
    a = simulate_replication(SPECS[0], 0, 1, **SMALL)
    with pytest.raises(ValueError, match="duplicate"):
        concat_replications([a, a])
    with pytest.raises(ValueError, match="seed"):
        concat_replications([a, simulate_replication(SPECS[0], 1, 2, **SMALL)])
    with pytest.raises(ValueError, match="config"):
        concat_replications([a, simulate_replication(SPECS[1], 1, 1, **SMALL)])


def test_simulate_many_equals_simulate():
    both = simulate_many(SPECS, replications=2, seed=3, **SMALL)
    for spec, ds in zip(SPECS, both, strict=True):
        xr.testing.assert_identical(_strip(ds), _strip(simulate(spec, replications=2, seed=3, **SMALL)))


# -- exact exponential kernel = general kernel in law ----------------------------------------
def _welch_ok(x, y, m, alpha=1e-3):
    """Welch t-interval for mean(x) − mean(y) contains 0 at level 1 − α/m (columns compared separately)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    vx, vy = x.var(axis=0, ddof=1) / len(x), y.var(axis=0, ddof=1) / len(y)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    return np.abs(x.mean(axis=0) - y.mean(axis=0)) <= st.t.ppf(1 - alpha / (2 * m), df) * np.sqrt(vx + vy)


def _summaries(ds, t=(0.5, 1.0, 2.0, 5.0, 10.0)):
    F = cdf_from_histogram(ds["count"].values, ds["overflow"].values)
    idx = np.round(np.asarray(t) / ds.attrs["dt"]).astype(int) - 1
    occ = ds["occupancy_at_arrival"].values
    p = occ[:, :4] / occ.sum(axis=1, keepdims=True)
    edges = ds["t"].values + ds.attrs["dt"]
    q99 = np.array([quantile(edges, f, 0.99) for f in F])
    assert np.isfinite(q99).all()  # a percentile beyond t_max would make the comparison meaningless
    return np.column_stack([ds["mean"].values, ds["mean_number_per_server"].values, q99, F[:, idx], p])


@pytest.mark.parametrize("dispatch, extra", [("jsq", {}), ("random", {}), ("round-robin", {}),
                                             ("jsq-d", {"choices": 2})])
def test_exponential_kernel_same_law_as_general(dispatch, extra):
    spec = JSQPS.from_rho(3, 0.8, dispatch=dispatch, **extra)
    # t_max well above every replication's 99th percentile (random dispatch: M/M/1-PS at ρ = 0.8)
    kw = dict(SMALL, horizon=12_000.0, warmup=600.0, replications=20, seed=21, t_max=150.0)
    ex = _summaries(simulate(spec, kernel="exponential", **kw))
    ge = _summaries(simulate(spec, kernel="general", **kw))
    assert _welch_ok(ex, ge, m=ex.shape[1]).all()


def test_kernel_comparison_has_power():
    """The same comparison tells apart ρ = 0.8 and ρ = 0.83 (so it can fail)."""
    kw = dict(SMALL, horizon=12_000.0, warmup=600.0, replications=20, seed=21)
    ex = _summaries(simulate(JSQPS.from_rho(3, 0.8), kernel="exponential", **kw))
    ge = _summaries(simulate(JSQPS.from_rho(3, 0.83), kernel="general", **kw))
    assert not _welch_ok(ex[:, :2], ge[:, :2], m=ex.shape[1]).any()


# -- validation -----------------------------------------------------------------------------
GOOD = JSQPS.from_rho(2, 0.5)
BAD_CALLS = [
    ("spec", dict(spec="not a spec")),
    ("rho", dict(spec=JSQPS(R=1, interarrival=Exponential(2.0), service=Exponential(1.0)))),
    ("rho", dict(spec=JSQPS(R=2, interarrival=Exponential(2.0), service=Exponential(1.0)))),
    ("horizon", dict(horizon=1000.0, warmup=600.0)),
    ("horizon", dict(horizon=1000.0, warmup=100.0, cooldown=900.0)),
    ("horizon", dict(horizon=float("nan"))),
    ("warmup", dict(warmup=-1.0)),
    ("cooldown", dict(cooldown=-1.0)),
    ("dt", dict(dt=0.0)),
    ("dt", dict(dt=-0.1)),
    ("dt", dict(dt="0.1")),
    ("t_max", dict(t_max=0.005)),
    ("replications", dict(replications=0)),
    ("replications", dict(replications=1.5)),
    ("seed", dict(seed=-1)),
    ("seed", dict(seed=1.0)),
    ("backend", dict(backend="simpy")),
    ("occupancy_max", dict(occupancy_max=0)),
    ("replication_offset", dict(replication_offset=-2)),
    ("max_workers", dict(max_workers=-1)),
    ("kernel", dict(kernel="gpu")),
    ("kernel='exponential'", dict(spec=JSQPS.from_rho(2, 0.5, service="lognormal"), kernel="exponential")),
    ("kernel='exponential'", dict(spec=JSQPS.from_rho(2, 0.5, discipline="limited", ps_limit=2),
                                  kernel="exponential")),
    ("service_bins", dict(service_bins=(0.1, 10), backend="ciw")),
    ("service_bins", dict(service_bins=0.1)),
    ("service_bins width", dict(service_bins=(0.0, 10), kernel="general")),
    ("service_bins number", dict(service_bins=(0.1, 0), kernel="general")),
]


@pytest.mark.parametrize("field, kwargs", BAD_CALLS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_CALLS)])
def test_invalid_input_names_field(field, kwargs):
    kwargs = dict(kwargs)
    spec = kwargs.pop("spec", GOOD)
    args = dict(horizon=2_000.0, warmup=100.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=field.replace("(", r"\(").replace("'", "'")):
        simulate(spec, **args)


def test_invalid_replication_index():
    with pytest.raises(ValueError, match="replication"):
        simulate_replication(GOOD, -1, 0, horizon=2_000.0, warmup=100.0)


# -- CLI ------------------------------------------------------------------------------------
def test_cli_writes_dataset_and_prints_summary(tmp_path, capsys):
    out = tmp_path / "run.nc"
    rc = main(["simulate", "-R", "3", "--rho", "0.7", "--service", "lognormal", "--dispatch", "jsq-d:2",
               "--discipline", "limited:4", "--horizon", "3000", "--warmup", "100", "--replications", "3",
               "--seed", "4", "--dt", "0.125", "--t-max", "30", "--output", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    for word in ("JSQ(2)", "LPS(c=4)", "customers", "mean sojourn", "95%", "99th", "99.999th", "wall time"):
        assert word in text, word
    ds = read_netcdf(out)
    assert ds.sizes["replication"] == 3 and ds.attrs["dt"] == 0.125
    spec = JSQPS.from_dict(json.loads(ds.attrs["spec"]))
    assert (spec.dispatch, spec.choices, spec.discipline, spec.ps_limit) == ("jsq-d", 2, "limited", 4)
    assert isinstance(spec.service, Lognormal) and spec.rho == pytest.approx(0.7)


#: the program (``main()`` reading sys.argv, as the ``sojourn`` script runs it): what it imported, and its file
PROGRAM = """
import sys
sys.argv = ["sojourn", "simulate", "-R", "3", "--load", "0.95", "--horizon", "3000", "--replications", "3",
            "--dt", "0.125", "--t-max", "40", "--output", sys.argv[1]]
from sojourn.cli import main
status = main()
skipped = [m for m in ("dask", "distributed", "cffi", "pycparser", "scipy.linalg") if sys.modules.get(m) is not None]
import scipy.linalg.cython_blas  # noqa: E402,F401  (numba loaded its registries without it: the process may import it)
print(skipped, status)
"""


def test_program_skips_unused_imports_and_writes_the_same_data(tmp_path):
    """``sojourn simulate`` as a program never imports dask (xarray's optional back-end) or cffi (numba's): about
    0.5 CPU s of its start-up (benchmarks/simulate_vs_ciw.py --whole-process), nor scipy.linalg (numba's registries
    look for it; sojourn.jsq_ps.raw._numba_registries), which it can still import afterwards; it loads its kernel
    first and imports xarray beside the replications; its file holds the same data as the same command run inside a
    process that has them all (a caller's process keeps them)."""
    import subprocess
    import sys

    out = tmp_path / "program.nc"
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[] 0"
    inside = tmp_path / "inside.nc"
    assert main(["simulate", "-R", "3", "--load", "0.95", "--horizon", "3000", "--replications", "3", "--dt",
                 "0.125", "--t-max", "40", "--output", str(inside)]) == 0
    xr.testing.assert_identical(_strip(read_netcdf(out)), _strip(read_netcdf(inside)))


@pytest.mark.parametrize("argv, field", [
    (["--rho", "1.2"], "rho"),
    (["--rho", "0.5", "--dispatch", "jsq-d:9"], "choices"),
    (["--rho", "0.5", "--dispatch", "nearest"], "dispatch"),
    (["--rho", "0.5", "--discipline", "limited:x"], "discipline"),
    (["--rho", "0.5", "--service", "cauchy"], "law"),
    (["--rho", "0.5", "--horizon", "100", "--warmup", "50"], "horizon"),
    (["--rho", "0.5", "--backend", "gpu"], "backend"),
    (["--rho", "0.5", "--replications", "0"], "replications"),
    (["--rho", "0.5", "--dt", "0"], "dt"),
])
def test_cli_invalid_input_exit_2(argv, field, tmp_path, capsys):
    out = tmp_path / "x.nc"
    rc = main(["simulate", "-R", "2", *argv, "--output", str(out)])
    assert rc == 2
    assert field in capsys.readouterr().err
    assert not out.exists()


def test_cli_aliases_servers_and_load(tmp_path, capsys):
    """-R and --rho are the flags (the config's and the datasets' names); --servers and --load are accepted as their
    aliases, with one line each in the help, and an error names the primary flag."""
    from sojourn.cli import build_parser

    out = tmp_path / "alias.nc"
    assert main(["simulate", "--servers", "2", "--load", "0.5", "--horizon", "500", "--warmup", "50",
                 "--replications", "2", "--output", str(out)]) == 0
    assert JSQPS.from_dict(json.loads(read_netcdf(out).attrs["spec"])).R == 2
    helptext = build_parser("simulate")._subparsers._group_actions[0].choices["simulate"].format_help()
    assert "-R R, --servers R" in helptext and "--rho RHO, --load RHO" in helptext
    capsys.readouterr()
    assert main(["simulate", "--servers", "2", "--load", "1.5", "--output", str(tmp_path / "bad.nc")]) == 2
    assert "--rho" in capsys.readouterr().err
