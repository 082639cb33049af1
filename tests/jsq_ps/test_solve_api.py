"""sojourn.jsq_ps.solve.api / CLI: Dataset layout, validation, and the shared grid."""
import numpy as np
import pytest
import xarray as xr

import sojourn
from sojourn import JSQPS
from sojourn.cli import main
from sojourn.core.laws.distributions import Exponential
from sojourn.jsq_ps.solve import time_grid
from sojourn.jsq_ps.solve.api import approximate, approximate_all, summary


def test_grid_is_the_published_one():
    t = time_grid()
    assert t.size == 18233 and t[0] == 0.0 and t[-1] == 182.32 and t[1] == 0.01
    assert np.array_equal(t, np.round(np.arange(18233) * 0.01, 10))


def test_dataset_layout_single():
    spec = JSQPS.from_rho(2, 0.5)
    ds = sojourn.approximate(spec, "A", t_max=20.0)
    assert set(ds.data_vars) == {"cdf", "lambda_n", "A_n", "run_time", "valid", "validity_reason", "validity_violation"}
    assert int(ds["valid"]) == 1 and int(ds["validity_reason"]) == 0 and "flag_meanings" in ds["validity_reason"].attrs
    assert ds["cdf"].dims == ("t",) and ds.sizes["t"] == 2001
    assert ds.attrs["L1"] == 22 and ds.attrs["L2"] == 130 and ds.attrs["faithful"] == 1 and ds.attrs["method"] == "A"
    assert "git_commit" in ds.attrs and "config" in ds.attrs
    assert float(ds["A_n"].sum()) == pytest.approx(1.0, abs=1e-12)


def test_approximate_all_matches_single_and_shares():
    spec = JSQPS.from_rho(3, 0.6)
    t = time_grid(30.0, 0.01)
    methods = ["A", "D", "C*", "exact"]
    ds = approximate_all(spec, methods, t=t)
    assert ds["cdf"].dims == ("approximation", "t") and list(ds["approximation"].values) == methods
    for m in ("A", "C*"):
        np.testing.assert_allclose(
            ds["cdf"].sel({"approximation": m}).values, approximate(spec, m, t=t)["cdf"].values, atol=1e-14
        )
    assert (
        int(ds["faithful"].sel({"approximation": "A"})) == 1
        and int(ds["faithful"].sel({"approximation": "exact"})) == 0
    )


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(method="Z"), "method"),
        (dict(method="A", L1=1), "L1"),
        (dict(method="A", L1=10, L2=5), "L2"),
        (dict(method="A", dt=0.0), "dt"),
        (dict(method="A", dt=-1.0), "dt"),
        (dict(method="A", t_max=float("nan")), "t_max"),
        (dict(method="A", bogus=3), "bogus"),
        (dict(method="exact", L2=3), "L2"),
        (dict(method="A", t=[1.0, 0.5]), "t"),
    ],
)
def test_invalid_inputs_name_the_field(kwargs, field):
    spec = JSQPS.from_rho(2, 0.5)
    with pytest.raises(ValueError, match=field):
        approximate(spec, **kwargs)


@pytest.mark.parametrize(
    "spec,field",
    [
        (JSQPS.from_rho(2, 0.5, service="deterministic"), "method A needs exponential service.*use method T"),
        (JSQPS.from_rho(2, 0.5, arrivals="deterministic"), "interarrival must be Exponential"),
        (JSQPS.from_rho(2, 0.5, dispatch="random"), "dispatch"),
        (JSQPS.from_rho(2, 0.5, discipline="limited", ps_limit=2), "discipline"),
        (JSQPS(R=2, interarrival=Exponential(2.5), service=Exponential(1.0)), "rho must"),
    ],
)
def test_invalid_specs(spec, field):
    with pytest.raises(ValueError, match=field):
        approximate(spec, "A")


def test_summary_percentiles():
    t = time_grid(10.0, 0.01)
    F = 1 - np.exp(-t)
    s = summary(t, F)
    assert s["mean"] == pytest.approx(1 - np.exp(-10.0), abs=1e-4)
    # F linear between grid points: off by (x - t_i)(t_i+1 - x)/2 · |f'/f| <= dt²/8 here, not a grid step
    assert s[0.99] == pytest.approx(-np.log(0.01), abs=0.01**2 / 8) and F[np.searchsorted(t, s[0.99])] > 0.99
    assert np.isnan(s[0.99999])


def test_cli_writes_netcdf(tmp_path, capsys):
    out = tmp_path / "a.nc"
    assert (
        main(["approximate", "-R", "2", "--rho", "0.5", "--method", "E", "--t-max", "50", "--output", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "99.99th percentile" in text and "mean sojourn" in text
    with xr.open_dataset(out) as ds:
        assert ds.sizes["t"] == 5001 and ds.attrs["method"] == "E"
    assert main(["approximate", "-R", "2", "--rho", "0.5", "--method", "Q", "--output", str(out)]) == 2


def test_blas_limiter_restores_thread_count_under_concurrency():
    import threading

    from sojourn.jsq_ps.solve._blas import _find_libs, single_threaded_blas

    libs = _find_libs()
    if not libs:
        pytest.skip("no bundled OpenBLAS found")
    before = [g() for g, _ in libs]
    inside = []
    gate = threading.Barrier(2)

    def work():
        with single_threaded_blas():
            gate.wait()
            inside.append([g() for g, _ in libs])
            gate.wait()

    th = [threading.Thread(target=work) for _ in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    assert all(v == [1] * len(libs) for v in inside)
    assert [g() for g, _ in libs] == before
