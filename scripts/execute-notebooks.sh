#!/usr/bin/env bash
# Re-executes notebooks in place the way nbval checks them (tests: --nbval notebooks/): against a fresh
# sandbox of binder/start's 500 cases, with the %%pmsql progress line off (conftest.py's kernel config).
# Usage: bash scripts/execute-notebooks.sh [notebooks/NN-name.ipynb ...]   (default: every notebook)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=.venv/bin
ipython_dir=$(mktemp -d)
trap 'rm -rf "$ipython_dir"' EXIT
mkdir -p "$ipython_dir/profile_default"
"$bin/python" -c 'import conftest, sys; sys.stdout.write(conftest.KERNEL_CONFIG)' \
  > "$ipython_dir/profile_default/ipython_kernel_config.py"
[ $# -gt 0 ] || set -- notebooks/*.ipynb
IPYTHONDIR="$ipython_dir" PM_SANDBOX_CASES=500 PATH="$PWD/$bin:$PATH" bash binder/start \
  jupyter nbconvert --to notebook --execute --inplace --ExecutePreprocessor.timeout=600 "$@"
