"""The `kvbench` executable's entry point, kept apart from `kvbench.cli` so that a Ctrl-C while the
CLI's modules are still loading ends the process as quietly as one during a command (status 130,
no traceback)."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    try:
        from kvbench.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)
