# Shared by every study's rules: the results root, code fingerprints (rerun triggers for package code,
# computed from what each rule's entry module imports: sojourn.core.fingerprint), the final targets of
# each study, and the process-wide Dask client every run: block submits to (profile force-use-threads).
from sojourn.core.config import ConfigError, canonical
from sojourn.core.fingerprint import fingerprint

RESULTS = config["results"]
TARGETS = {}  # study name -> its final outputs (rule all)


def logged(log_path, fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` with a record in the job's log: the call, its result and duration, or
    the traceback of what went wrong (then re-raised, so the job fails as usual)."""
    import time
    import traceback

    with open(log_path, "w") as fh:
        print(f"{fn.__module__}.{fn.__qualname__}", file=fh, flush=True)
        t0 = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            traceback.print_exc(file=fh)
            raise
        print(f"done in {time.perf_counter() - t0:.2f} s: {result}", file=fh)
    return result


def dask():
    """The Dask client shared by all jobs of this Snakemake process (started on first use)."""
    from sojourn.core.cluster import shared_client

    return shared_client(config["cluster"], config["cluster"].get("n_workers") or workflow.cores)


def _close_dask():
    from sojourn.core.cluster import close_shared

    close_shared()


onsuccess:
    _close_dask()


onerror:
    _close_dask()
