"""The `kvbench` executable's entry point (`kvbench`, and `python -m kvbench`), kept apart from
`kvbench.cli` so that a Ctrl-C while the CLI's modules are still loading ends the process as
quietly as one during a command (status 130, no traceback), and so that `kvbench --version` answers
before typer, rich and every command module are loaded (their import is most of a busy box's
start-up time)."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    try:
        if sys.argv[1:] == ["--version"]:  # the one answer that needs no command module
            from kvbench import __version__

            print(f"kvbench {__version__}")
            sys.exit(0)
        from kvbench.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)


if __name__ == "__main__":  # python -m kvbench
    main()
