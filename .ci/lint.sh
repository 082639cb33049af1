#!/usr/bin/env bash
# The linters as gates (issue 33): ruff on the Python (its configuration: pyproject.toml), snakefmt on the rule files
# and `snakemake --lint` on the workflow. Every gate runs and reports; the script fails if any failed.
#   bash .ci/lint.sh            # in a venv with `pip install -e ".[lint]"` (the pinned versions)
# Run by .ci/run; also what a contributor runs before a commit (.pre-commit-config.yaml runs the first two).
set -uo pipefail
cd "$(dirname "$0")/.."
failed=()
gate() {
    echo "lint: $*"
    if ! "$@"; then
        failed+=("$*")
    fi
}
gate ruff check src tests benchmarks
gate snakefmt --check workflow Snakefile
gate python -m snakemake --lint --cores 1
if ((${#failed[@]})); then
    printf 'lint: FAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "lint: all gates pass"
