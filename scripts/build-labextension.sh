#!/usr/bin/env bash
# Builds the JupyterLab extension (labextension/) into labextension/dist/labextensions/pm-notebook with the Python
# given as $1, which has pm_notebook, the stand-in (pm_sandbox, its sandbox extra) and JupyterLab: the Druid
# function names from the stand-in's function table, then TypeScript and JupyterLab's builder against that
# JupyterLab's core, so no `jupyter lab build` is needed. `npm ci` has run in labextension/ (make does it,
# binder/postBuild too).
set -euo pipefail
python="$1"
cd "$(dirname "$0")/.."
"$python" scripts/labext_functions.py labextension/src/druid-functions.json
rm -rf labextension/dist labextension/lib labextension/tsconfig.tsbuildinfo
core="$("$python" -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')"
(cd labextension && JUPYTERLAB_CORE="$core" npm run --silent build)
cp labextension/install.json labextension/dist/labextensions/pm-notebook/install.json
