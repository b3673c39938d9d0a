"""The typer applications the command modules add their commands to."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure every path KV-cache bytes travel. Rates in decimal GB/s (1 GB = 1e9 B).")


def _version(value: bool) -> None:
    if value:
        from kvbench import __version__

        print(f"kvbench {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                   help="print kvbench's version and exit")] = False) -> None:
    """Measure every path KV-cache bytes travel. Rates in decimal GB/s (1 GB = 1e9 B)."""
crosscheck_app = typer.Typer(no_args_is_help=True, help="Run kvbench next to a peer tool and print both with the ratio.")
app.add_typer(crosscheck_app, name="crosscheck")
