"""Write the exact versions of sojourn's dependencies, and of theirs, as installed in the running environment: a pip
constraints file for installing the tested versions on a cluster (docs/hpc.md, "Installing on a cluster").

    python envs/freeze_constraints.py > envs/constraints.txt        # in an environment where the tests pass

Only the dependency closure of sojourn (its [project] dependencies and the ``test`` and ``tls`` extras) is written, not
everything the environment happens to hold; sojourn itself is left out (install it from the source tree)."""
from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, distribution

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

EXTRAS = ("test", "tls")


def closure(root: str = "sojourn", extras=EXTRAS) -> dict[str, str]:
    """canonical name -> installed version of every distribution ``root`` (with ``extras``) needs, transitively."""
    out: dict[str, str] = {}
    todo = [(root, tuple(extras))]
    while todo:
        name, wanted = todo.pop()
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # an optional dependency not installed here
        for text in dist.requires or []:
            req = Requirement(text)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            key = canonicalize_name(req.name)
            if key in out or key == canonicalize_name(root):
                continue
            try:
                out[key] = distribution(req.name).version
            except PackageNotFoundError:
                continue
            todo.append((req.name, tuple(req.extras)))
    return dict(sorted(out.items()))


def main() -> int:
    import platform

    print(f"# pip constraints: sojourn's dependency closure as installed with Python {platform.python_version()} "
          "(envs/freeze_constraints.py);")
    print("# pip install -c envs/constraints.txt -e \".[test,tls]\"")
    for name, version in closure().items():
        print(f"{name}=={version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
