"""The ``pm-notebook`` command (also ``python -m pm_notebook``).

Subcommands:

* ``pm-notebook sandbox [--port P] [--sql-port Q] [--env-file F] ...`` — run the local stand-in of the
  service; same options as ``python -m pm_notebook.sandbox`` (see ``pm-notebook sandbox --help``).
"""

from __future__ import annotations

import sys

__all__ = ["main"]

_USAGE = """usage: pm-notebook <command> [options]

commands:
  sandbox   run the local stand-in of the process-mining service (pm-notebook sandbox --help)
"""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pm-notebook`` console script; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "sandbox":
        from .sandbox.server import main as sandbox_main

        return sandbox_main(rest, prog="pm-notebook sandbox")
    print(f"pm-notebook: unknown command {command!r}\n\n{_USAGE}", file=sys.stderr, end="")
    return 2


if __name__ == "__main__":
    sys.exit(main())
