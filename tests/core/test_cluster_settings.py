"""sojourn.core.cluster.cluster's reading of a SLURM allocation and of ``cluster.slurm`` (no cluster started).

The allocation is read from the variables SLURM sets in a job (given here as an environment mapping, as a job
would see them); tests/workflow/test_slurm_dask.py checks the same on a real SLURM job. Bad ``cluster.slurm``
values: tests/workflow/test_bad_inputs.py.
"""
from __future__ import annotations

import pytest

from sojourn.core.checks.config import ConfigError
from sojourn.core.cluster.cluster import (
    allocation,
    local_size,
    slurm_jobs,
    walltime_seconds,
    walltime_warnings,
    worker_lifetime,
)

MiB = 2**20


def test_allocation_is_what_slurm_gave_not_what_the_machine_has():
    machine = allocation({})
    assert not machine["in_slurm_job"]
    job = allocation({"SLURM_JOB_ID": "7", "SLURM_CPUS_PER_TASK": "1", "SLURM_CPUS_ON_NODE": "1",
                      "SLURM_MEM_PER_NODE": "700"})
    assert (job["cpus"], job["memory"]) == (1, 700 * MiB)
    assert job["cpus_from"] == "SLURM_CPUS_PER_TASK=1" and job["memory_from"] == "SLURM_MEM_PER_NODE=700"
    # --mem-per-cpu, and a job without --cpus-per-task (SLURM_CPUS_ON_NODE)
    job = allocation({"SLURM_JOB_ID": "7", "SLURM_CPUS_ON_NODE": "1", "SLURM_MEM_PER_CPU": "300"})
    assert (job["cpus"], job["memory"]) == (1, 300 * MiB)
    # never more than the machine: a variable beyond it (or garbage) leaves the machine's figure
    big = allocation({"SLURM_JOB_ID": "7", "SLURM_CPUS_PER_TASK": "100000", "SLURM_MEM_PER_NODE": "x"})
    assert (big["cpus"], big["memory"]) == (machine["cpus"], machine["memory"])
    # outside a job the SLURM variables mean nothing (an salloc shell on the login node exports them too)
    assert allocation({"SLURM_CPUS_PER_TASK": "1"})["cpus"] == machine["cpus"]


def test_local_cluster_size_inside_a_job_is_capped_at_the_allocation():
    job = allocation({"SLURM_JOB_ID": "7", "SLURM_CPUS_PER_TASK": "1", "SLURM_MEM_PER_NODE": "700"})
    n, mem, how = local_size({"memory_limit": "auto"}, 2, job)  # Snakemake's --cores 2 in a 1-CPU job
    assert (n, mem) == (1, 700 * MiB)
    assert "capped at the 1 CPU(s) SLURM allocated" in how
    n, mem, how = local_size({"memory_limit": "4GB"}, None, job)
    assert (n, mem) == (1, 700 * MiB) and "memory_limit 4GB capped" in how
    n, mem, _ = local_size({"memory_limit": "500MiB"}, None, job)
    assert (n, mem) == (1, 500 * MiB)
    two = allocation({"SLURM_JOB_ID": "7", "SLURM_CPUS_PER_TASK": "2", "SLURM_MEM_PER_CPU": "300"})
    if two["cpus"] == 2:  # a machine of >= 2 CPUs
        assert local_size({"memory_limit": "auto"}, None, two)[:2] == (2, 300 * MiB)
    # outside a job, an explicit worker count is the user's choice
    assert local_size({"memory_limit": "auto"}, 7, allocation({}))[0] == 7


def test_slurm_time_limits_and_worker_lifetimes():
    assert [walltime_seconds(t) for t in ("30", "05:30", "01:00:00", "2-00", "1-02:03", "1-00:00:10")] == \
        [1800, 330, 3600, 172800, 93780, 86410]
    assert [walltime_seconds(t) for t in ("0", "UNLIMITED", "infinite")] == [None] * 3  # no limit
    for bad in ("1h", "", "00:00", "1:2:3:4", "-5"):
        with pytest.raises(ValueError, match="SLURM time limit|longer than 0"):
            walltime_seconds(bad)
    # the walltime less 10 % (>= 60 s, <= 10 min), never below half of it
    assert [worker_lifetime(w) for w in (60, 600, 3600, 86400)] == [30, 540, 3240, 85800]


def test_jobs_is_a_fixed_count_minimum_and_maximum_adapt():
    assert slurm_jobs({}) == (1, 2)
    assert slurm_jobs({"jobs": 4}) == (4, 4)
    assert slurm_jobs({"minimum_jobs": 3}) == (3, 3)
    assert slurm_jobs({"maximum_jobs": 10}) == (1, 10)
    with pytest.raises(ConfigError, match=r"^cluster\.slurm\.jobs: .*not both"):
        slurm_jobs({"jobs": 2, "minimum_jobs": 1})
    with pytest.raises(ConfigError, match=r"^cluster\.slurm\.maximum_jobs: must be >= minimum_jobs \(3\); got 2"):
        slurm_jobs({"minimum_jobs": 3, "maximum_jobs": 2})


def test_walltime_is_checked_against_the_predicted_task_and_the_unpredicted_parts_are_named():
    from sojourn.jsq_ps.config import predicted_task_seconds

    section = {"approximation": {"methods": ["A", "exact"], "exact_budget": {"max_seconds": 600}}}
    predicted, unpredicted = predicted_task_seconds(section)
    assert predicted == [(600.0, "exact on one approximation cell (jsq_ps.approximation.exact_budget.max_seconds)")]
    assert "simulation replications (jsq_ps.simulation)" in unpredicted and "the approximation methods A" in unpredicted
    short = {"kind": "slurm", "slurm": {"walltime": "00:10:00"}}  # a worker retires after 540 s < 600 s
    lines = walltime_warnings(short, predicted, unpredicted)
    assert len(lines) == 2
    assert lines[0].startswith("cluster.slurm.walltime 00:10:00: a worker retires after 540 s") and "600 s" in lines[0]
    assert "no run-time prediction exists" in lines[1] and "simulation replications" in lines[1]
    assert len(walltime_warnings({"kind": "slurm", "slurm": {"walltime": "01:00:00"}}, predicted, [])) == 0
    # a --lifetime of the user's is what counts
    own = {"kind": "slurm", "slurm": {"walltime": "01:00:00", "worker_extra_args": ["--lifetime", "5m"]}}
    assert "retires after 300 s" in walltime_warnings(own, predicted, [])[0]
    assert walltime_warnings({"kind": "local"}, predicted, unpredicted) == []
