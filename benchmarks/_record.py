"""One way for the benchmarks to append a record to their jsonl: the fields every speed figure needs to be read
later (what ran, on which machine, how many CPUs, the load average at the time) added once, here.

    sys.path.insert(0, str(Path(__file__).parent)); import _record
    _record.append(OUT, "exact_reach", rows=rows, ...)
"""

from __future__ import annotations

import json
import os
import time


def append(path, what: str, **fields) -> dict:
    """Append ``{"what": what, time, machine, cpus, load_average, **fields}`` as one json line to ``path``."""
    rec = {"what": what, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": os.uname().nodename,
           "cpus": os.cpu_count(), "load_average": os.getloadavg(), **fields}
    with open(path, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    return rec
