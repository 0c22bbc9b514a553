"""``python -m pm_sandbox``: run the local stand-in of the service (see ``--help``)."""

from __future__ import annotations

import sys

from .server import main

if __name__ == "__main__":
    sys.exit(main())
