# Shared helpers: results root, the grid, code hashes (rerun triggers for package code) and the
# process-wide Dask client that every run: block submits to (profile force-use-threads: true).
from pathlib import Path

import sojourn
import sojourn.grid as G

RES = f"results/{config['study']}"
LOGS = f"logs/{config['study']}"
LAWS = G.service_laws(config)
BLOCKS = G.blocks(config)  # the Snakemake jobs: cells grouped by (service, R, rho interval)
PKG = Path(sojourn.__file__).parent
# Each rule gets the hash of exactly the package code it runs, so editing e.g. src/sojourn/analytic/
# reruns the approximations and what depends on them, nothing else.
CODE = {
    "simulate": G.code_hash(PKG, "simulate", "seeds.py", "models.py", "distributions.py", "_validate.py",
                            "pipeline.py"),
    "approximate": G.code_hash(PKG, "analytic", "models.py", "distributions.py", "_validate.py", "pipeline.py"),
    "merge": G.code_hash(PKG, "pipeline.py", "grid.py", "datasets.py", "merge.py"),
    "compare": G.code_hash(PKG, "compare.py", "stats.py"),
    "figures": G.code_hash(PKG, "plots.py"),
}


wildcard_constraints:
    service=r"[a-z0-9_]+",
    R=r"\d+",
    block=r"0\.\d+(-[01]\.\d+)?",


def dask():
    """The Dask client shared by all jobs of this Snakemake process (started on first use)."""
    from sojourn.cluster import shared_client

    return shared_client(config["cluster"], config["cluster"].get("n_workers") or workflow.cores)


def _close_dask():
    from sojourn.cluster import close_shared

    close_shared()


onsuccess:
    _close_dask()


onerror:
    _close_dask()
