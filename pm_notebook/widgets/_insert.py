"""A button that puts a ready query into a new notebook cell (or the clipboard).

Why an anywidget: the kernel has no way to add a cell in JupyterLab 4 / Notebook 7.
``set_next_input`` only travels on an execute reply (a widget click is a comm message), and
``IPython.display.Javascript`` is not run by JupyterLab. Frontend code is needed, and anywidget
ships it without a lab extension of our own. The frontend code, in order of preference:

1. inserts a code cell right below the cell that shows the widget, through the notebook model
   the widget manager holds (JupyterLab 4 and Notebook 7 share that manager);
2. otherwise copies the query to the clipboard (the click is a user gesture, so browsers allow it);
3. otherwise selects the query text in the widget so the user can copy it by hand.

It reports which of these happened back to the kernel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets as t

__all__ = ["QueryInserter"]

log = logging.getLogger(__name__)

_ESM = r"""
function findCellIndex(model, el) {
  const anchor = model.get("anchor");
  const nb = model.widget_manager?.context?.model;
  const shared = nb?.sharedModel;
  if (!shared) return [null, -1];
  const cells = shared.cells || [];
  const mime = "application/vnd.jupyter.widget-view+json";
  for (let i = 0; i < cells.length; i++) {
    const outs = cells[i].cell_type === "code" && cells[i].getOutputs ? cells[i].getOutputs() : [];
    if (anchor && outs.some((o) => o && o.data && o.data[mime] && o.data[mime].model_id === anchor)) {
      return [shared, i];
    }
  }
  const cellNode = el.closest(".jp-Cell");
  const siblings = cellNode ? Array.from(cellNode.parentElement.children) : [];
  const list = siblings.filter((n) => n.classList.contains("jp-Cell"));
  return [shared, cellNode ? list.indexOf(cellNode) : -1];
}

async function insert(model, el, note) {
  const query = model.get("query");
  if (!query) return;
  try {
    const [shared, index] = findCellIndex(model, el);
    if (shared && index >= 0) {
      shared.insertCell(index + 1, { cell_type: "code", source: query, metadata: {} });
      note.textContent = "Inserted into a new cell below.";
      model.send({ event: "inserted", how: "cell" });
      return;
    }
  } catch (err) {
    console.warn("pm_notebook: cannot insert a cell", err);
  }
  try {
    await navigator.clipboard.writeText(query);
    note.textContent = "Copied to the clipboard: paste it into a cell.";
    model.send({ event: "inserted", how: "clipboard" });
    return;
  } catch (err) {
    console.warn("pm_notebook: clipboard not available", err);
  }
  note.textContent = "Copy this query: " + query;
  const range = document.createRange();
  range.selectNodeContents(note);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  model.send({ event: "inserted", how: "shown" });
}

function render({ model, el }) {
  const button = document.createElement("button");
  button.className = "jupyter-button widget-button pm-insert-button";
  const note = document.createElement("span");
  note.className = "pm-insert-note";
  const sync = () => {
    button.textContent = model.get("label");
    button.disabled = model.get("disabled") || !model.get("query");
    button.title = model.get("query") || "Select a table first";
  };
  sync();
  model.on("change:query", () => { sync(); note.textContent = ""; });
  model.on("change:disabled", sync);
  model.on("change:label", sync);
  button.addEventListener("click", () => insert(model, el, note));
  model.on("msg:custom", (msg) => { if (msg && msg.action === "insert") insert(model, el, note); });
  el.classList.add("pm-insert");
  el.append(button, note);
}
export default { render };
"""

_CSS = """
.pm-insert { display: flex; align-items: center; gap: 0.6em; }
.pm-insert .pm-insert-button { width: auto; padding: 0 1em; }
.pm-insert-note { font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color2, #555); }
"""


class QueryInserter(anywidget.AnyWidget):
    """Button that inserts :attr:`query` into a new cell below the widget (clipboard as fallback).

    ``insert()`` asks the frontend to do what a click does; :attr:`outcome` then says what
    happened: ``"cell"``, ``"clipboard"`` or ``"shown"`` (empty until a frontend answers).
    """

    _esm = _ESM
    _css = _CSS

    query = t.Unicode("", help="The text to insert.").tag(sync=True)
    anchor = t.Unicode("", help="Model id of the widget whose output cell the query goes below.").tag(
        sync=True
    )
    label = t.Unicode("Insert %%pmsql cell", help="Button text.").tag(sync=True)
    disabled = t.Bool(False, help="Whether the button is disabled.").tag(sync=True)
    outcome = t.Unicode("", help="What the frontend did last: cell, clipboard or shown.")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._callbacks: list[Callable[[str], None]] = []
        self.on_msg(self._handle_frontend)

    def on_outcome(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(how)`` whenever the frontend reports an insertion."""
        self._callbacks.append(callback)

    def insert(self) -> str:
        """Ask the frontend to insert :attr:`query` as a click would; returns the query."""
        if self.query:
            self.send({"action": "insert"})
        return self.query

    def _handle_frontend(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("event") != "inserted":
            return
        how = str(content.get("how", ""))
        self.outcome = how
        log.debug("query inserted via %s", how)
        for callback in self._callbacks:
            callback(how)

    def __repr__(self) -> str:
        return f"QueryInserter(query={self.query!r})"
