"""sojourn.core.runs.job: every rule's run goes through run(): its log opened, the sojourn loggers of its thread routed
to it, the job timed, a failure's traceback recorded (and raised); jobs in concurrent threads keep their own logs."""
from __future__ import annotations

import logging
import threading

import pytest

from sojourn.core.runs import job

LOG = logging.getLogger("sojourn.test_job")


def work(*, n, fail=False, barrier=None, client=None):
    for i in range(n):
        LOG.info(f"step {i} of {threading.current_thread().name}")
        if barrier is not None:
            barrier.wait(timeout=10)  # the two jobs interleave their lines
    if fail:
        raise ValueError("the job's own error")
    return {"n": n, "client": client}


def test_log_has_entry_lines_and_duration(tmp_path):
    out = job.run("test_job:work", tmp_path / "a.log", n=2)
    assert out == {"n": 2, "client": None}
    lines = (tmp_path / "a.log").read_text().splitlines()
    assert lines[0] == "test_job:work" and lines[1].startswith("step 0 of ") and lines[-1].startswith("done in ")


def test_a_failure_is_recorded_with_its_traceback_and_raised(tmp_path):
    with pytest.raises(ValueError, match="the job's own error"):
        job.run("test_job:work", tmp_path / "b.log", n=1, fail=True)
    text = (tmp_path / "b.log").read_text()
    assert "Traceback (most recent call last)" in text and "ValueError: the job's own error" in text
    assert "done in" not in text


def interrupted():
    from sojourn.core.files.io import Interrupted

    raise Interrupted("interrupted (SIGINT): waiting for 1 of 2 cells stopped; a rerun redoes it")


def test_an_interrupt_is_one_line_without_a_traceback(tmp_path):
    """Ctrl-C stops a job on purpose: its log (printed on the terminal when a job fails, show-failed-logs) says so in
    one line, no traceback that would read as a crash."""
    from sojourn.core.files.io import Interrupted

    with pytest.raises(Interrupted):
        job.run("test_job:interrupted", tmp_path / "i.log")
    assert (tmp_path / "i.log").read_text().splitlines() == [
        "test_job:interrupted", "interrupted (SIGINT): waiting for 1 of 2 cells stopped; a rerun redoes it"]


def test_a_client_factory_is_called_inside_the_log(tmp_path):
    assert job.run("test_job:work", tmp_path / "c.log", n=0, client=lambda: "the client")["client"] == "the client"

    def broken():
        raise RuntimeError("cluster did not start")

    with pytest.raises(RuntimeError):
        job.run("test_job:work", tmp_path / "d.log", n=0, client=broken)
    assert "RuntimeError: cluster did not start" in (tmp_path / "d.log").read_text()


def test_concurrent_jobs_keep_their_own_logs(tmp_path):
    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=job.run, args=("test_job:work", tmp_path / f"{name}.log"),
                                kwargs={"n": 5, "barrier": barrier}, name=name) for name in ("first", "second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for name, other in (("first", "second"), ("second", "first")):
        text = (tmp_path / f"{name}.log").read_text()
        assert text.count(f"of {name}") == 5 and f"of {other}" not in text


def test_outside_a_job_nothing_is_written_to_a_job_log(tmp_path, caplog):
    job.run("test_job:work", tmp_path / "e.log", n=1)
    before = (tmp_path / "e.log").read_text()
    LOG.info("after the job")
    assert (tmp_path / "e.log").read_text() == before
