"""The `kvbench` command: thin. Each module adds its commands to `app`; every decision lives in the
packages they call. `main` turns kvbench's own errors into one line and their exit status."""

from __future__ import annotations

import sys

# Each module adds its commands, which `kvbench --help` lists in this order.
from kvbench.cli import host, run, judge, analysis, reports, crosscheck  # noqa: F401
from kvbench.cli.app import app
from kvbench.cli.common import err
from kvbench.errors import BadInput, CheckFailed


def main() -> None:
    # typer handles usage errors itself (exit 2); kvbench's own errors carry their exit code.
    try:
        app()
    except (BadInput, CheckFailed) as exc:
        prefix = "kvbench: error: " if isinstance(exc, BadInput) else "kvbench: "
        err.print(f"{prefix}{exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
