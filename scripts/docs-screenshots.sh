#!/usr/bin/env bash
# Refresh the docs' widget screenshots from the browser tests' artifacts (JupyterLab in headless Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest -q -p no:cacheprovider -m browser tests/browser
src=test-artifacts/browser
cp "$src/test_connect_browse_preview_insert_save/03-connected.png" docs/_static/screenshots/credentials.png
cp "$src/test_connect_browse_preview_insert_save/07-preview.png" docs/_static/screenshots/browser.png
cp "$src/test_process_map_renders_in_jupyterlab/02-explorer-performance.png" docs/_static/screenshots/process-map.png
cp "$src/test_resource_map_and_dotted_chart_in_jupyterlab/01-resource-map-and-dotted-chart.png" \
    docs/_static/screenshots/perspectives.png
new=$src/test_newcomer_connect_browse_insert_run_typo_complete_interrupt_map
cp "$new/02-browsed.png" docs/_static/screenshots/newcomer-browse.png
cp "$new/03-inserted-and-run.png" docs/_static/screenshots/newcomer-inserted.png
cp "$new/04-typo.png" docs/_static/screenshots/newcomer-typo.png
ls "$new"/*-interrupted.png | head -1 | xargs -I{} cp {} docs/_static/screenshots/newcomer-interrupt.png
cp "$src/test_pmsql_cell_reads_as_sql_and_python_cell_stays_python/01-cells.png" docs/_static/screenshots/pmsql-jupyterlab.png
cp "$src/test_notebook7_highlights_the_pmsql_cell_too/01-cells.png" docs/_static/screenshots/pmsql-notebook7.png
