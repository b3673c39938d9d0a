"""The typer applications the command modules add their commands to."""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperOption

_typer_type = TyperOption.display_type_rich


def _shown_type(self: TyperOption, ctx) -> str | None:
    """A flag takes no value, so --help shows none for it (typer 0.29 writes `<bool>` beside every flag)."""
    return None if self.is_flag and self.metavar is None else _typer_type(self, ctx)


TyperOption.display_type_rich = _shown_type

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
