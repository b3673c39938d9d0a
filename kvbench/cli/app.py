"""The typer applications the command modules add their commands to."""

from __future__ import annotations

from typing import Annotated

import typer
from typer.core import TyperOption

_typer_type = TyperOption.display_type_rich


# What an option's value is, where its name alone would not say (typer writes `<list[str]>`, `<float>`).
_PLACEHOLDERS = {"set": "KEY=VALUE", "tag": "KEY=VALUE", "bench": "ID", "samples": "N", "repeat": "N",
                 "max_cases": "N", "precision": "FRACTION", "max_time": "SECONDS", "timeout": "SECONDS",
                 "junit": "FILE", "output": "FILE", "rules": "FILE", "profile": "FILE|NAME", "run_ref": "RUN"}


def _shown_type(self: TyperOption, ctx) -> str | None:
    """A flag takes no value, so --help shows none for it (typer 0.29 writes `<bool>` beside every flag);
    any other option without a metavar shows a placeholder named for what it takes (SUITE, ID,
    KEY=VALUE, N, SECONDS), never a Python type."""
    if self.is_flag and self.metavar is None:
        return None
    shown = _typer_type(self, ctx)
    if self.metavar is not None or not shown or not shown.startswith("<") or ">" not in shown:
        return shown
    label = shown[1:shown.index(">")]
    if "|" in label:  # choices: name them, as they are
        return label
    name = (self.name or "").rstrip("_")  # set_: a Python keyword's way round
    return _PLACEHOLDERS.get(name, name.upper())


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
