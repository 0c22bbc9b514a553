"""Write the Druid function names of the sandbox's function table as JSON for the editor extension.

The JupyterLab extension (``labextension/``) highlights these names as functions in ``%%pmsql`` cells; the
list is generated at build time (``make``) from :data:`pm_sandbox.sql.dialect.functions.FUNCTIONS`,
so the editor, the sandbox and the service's dialect name the same functions.

    python scripts/labext_functions.py labextension/src/druid-functions.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pm_sandbox.sql.dialect.functions import FUNCTIONS


def main(target: str) -> None:
    names = sorted({f.name.upper() for f in FUNCTIONS.values()})
    text = json.dumps({"functions": names}, indent=1) + "\n"
    path = Path(target)
    if not path.exists() or path.read_text() != text:  # unchanged: keep the file's time (make's dependency)
        path.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1])
