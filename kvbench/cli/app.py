"""The typer applications the command modules add their commands to."""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure every path KV-cache bytes travel. Rates in decimal GB/s (1 GB = 1e9 B).")
crosscheck_app = typer.Typer(no_args_is_help=True, help="Run kvbench next to a peer tool and print both with the ratio.")
app.add_typer(crosscheck_app, name="crosscheck")
