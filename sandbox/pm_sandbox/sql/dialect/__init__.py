"""Druid SQL in, DuckDB SQL out — and only Druid SQL in.

The dialect is split by concern:

* :mod:`.pipeline` — :func:`translate`: tokenise, check, parse, check, rewrite, generate;
* :mod:`.strict` — what Druid's parser, function table and planner accept (refusals in Druid's words);
* :mod:`.functions` — Druid's function table as data (name → DuckDB rewrite, kind, doc page) and the rewriter;
* :mod:`.timefns` — the time functions (periods, Joda patterns, UTC); :mod:`.multivalue` — multi-value
  string semantics; :mod:`.integers` — integer division (Druid type names come from :mod:`..types`);
* :mod:`.engine_errors` — DuckDB's run-time errors in Druid's words.

The Druid release followed is named in ``docs/druid-dialect.md``.
"""

from ..access import Catalog
from .engine_errors import from_duckdb
from .functions import FUNCTIONS, DruidFunction
from .pipeline import Checked, Translated, check_access, translate
from .timefns import joda_to_strftime

__all__ = [
    "FUNCTIONS",
    "Catalog",
    "Checked",
    "DruidFunction",
    "Translated",
    "check_access",
    "from_duckdb",
    "joda_to_strftime",
    "translate",
]
