#!/usr/bin/env bash
# The lowest declared versions (.ci/lowest-versions.txt = pyproject's floors) in a venv of their own, then a
# subset of the tests that exercises the APIs whose floors matter: config validation (jsonschema, Snakemake's
# validator), CIs with the BCa bootstrap (scipy), the analytic methods (numpy), the kernels against theory
# and their golden outputs, the inline SFC64 stream and the split-merge kernels (numba), netCDF writing, merging and integrity (xarray, netCDF4), the watchdog and
# worker plugin (distributed), and one tiny real Snakemake run with figures, report and the terminal summary of
# the sojourn logger plugin (snakemake, matplotlib). By hand: bash .ci/lowest-versions.sh [VENV_DIR] (both steps).
# In two steps, as .ci/run calls it (the install, mostly pip's I/O, runs beside the main tests; the tests after them):
#   bash .ci/lowest-versions.sh --install VENV_DIR; bash .ci/lowest-versions.sh --test VENV_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
step=both
if [[ ${1:-} == --install || ${1:-} == --test ]]; then step=${1#--}; shift; fi
venv=${1:-$(mktemp -d)/lowest}
if [[ $step != both && -z ${1:-} ]]; then echo "lowest-versions.sh --$step needs the venv folder" >&2; exit 2; fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
if [[ $step != test ]]; then
    python3 -m venv "$venv"
    # compiled packages only as wheels (no compilers or C libraries needed); pure-Python sdists are fine
    "$venv/bin/pip" install -q --no-compile --prefer-binary \
        --only-binary=numpy,scipy,numba,llvmlite,netcdf4,cftime,matplotlib,contourpy,kiwisolver,pillow,pyyaml,pandas,psutil,msgpack \
        -r .ci/lowest-versions.txt "pytest>=7" "pytest-timeout>=2" "pytest-xdist>=3.5"
    "$venv/bin/pip" install -q --no-deps -e .
    "$venv/bin/pip" check
    echo "lowest versions: $("$venv/bin/pip" freeze | grep -i -E "^($(grep -v '^#' .ci/lowest-versions.txt | cut -d= -f1 | paste -sd'|'))==" | paste -sd' ')"
fi
[[ $step != install ]] || exit 0
"$venv/bin/python" -m pytest -q -p no:cacheprovider --durations=5 \
    tests/workflow/test_config.py tests/core/test_stats.py tests/jsq_ps/test_solve_api.py tests/jsq_ps/test_solve_methods.py \
    tests/jsq_ps/test_simulate_theory.py tests/jsq_ps/test_golden.py tests/core/test_merge.py tests/core/test_integrity.py \
    tests/jsq_ps/test_compare_streaming.py tests/split_merge/test_split_merge_solve.py tests/core/test_streams.py \
    "tests/split_merge/test_split_merge_simulation.py::test_streaming_kernel_equals_mgc_on_its_own_draws" \
    "tests/split_merge/test_split_merge_simulation.py::test_winner_tree_recursion_equals_mgc_and_the_host_level_model" \
    "tests/split_merge/test_split_merge_simulation.py::test_fork_join_sorted_window_equals_the_scan" \
    "tests/split_merge/test_split_merge_simulation.py::test_fork_join_kernel_equals_the_sequence_recursion_on_its_own_draws" \
    tests/workflow/test_no_hang.py::test_watchdog_fails_a_wait_when_the_cluster_has_no_worker \
    "tests/workflow/test_bad_inputs.py::test_validate_config_fills_defaults_like_snakemake" \
    "tests/workflow/test_pipeline.py::test_simulation_file" "tests/workflow/test_pipeline.py::test_approximation_file" \
    "tests/workflow/test_pipeline.py::test_comparison_values" "tests/workflow/test_pipeline.py::test_figures_and_report" \
    "tests/workflow/test_pipeline.py::test_terminal_shows_a_summary_and_the_log_every_job"
