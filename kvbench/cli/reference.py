"""docs/cli.md, the full command reference, written from the CLI's own help: every command and
group in `--help`'s order, its help text, its usage, and each argument and option with the help
and default `--help` shows. `python -m kvbench.cli.reference --write` rewrites the file;
tests/cli/test_reference.py fails when the file and the CLI differ, so the reference cannot drift."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import typer
from typer import Context

from kvbench.cli import app

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
HEAD = """# kvbench command reference

Every command of `kvbench`, generated from its own `--help` (`python -m kvbench.cli.reference --write`;
a test fails when this file and the CLI differ). The README shows the five commands most users
need; exit statuses and JSON shapes are in docs/json-outputs.md.
"""


def _plain(text: str) -> str:
    """Help text without rich's markup escapes (`\\[dram]` is shown as `[dram]`), on one line per paragraph."""
    return "\n\n".join(" ".join(p.split()) for p in re.sub(r"\\\[", "[", text or "").split("\n\n")).strip()


def _cell(text: str) -> str:
    return _plain(text).replace("|", "\\|").replace("\n\n", " ")


def _commands(group: typer.core.TyperGroup, ctx: Context) -> list[tuple[str, typer.core.TyperCommand, Context]]:
    """(full name, command, its context) of every visible command below `group`, in --help's order."""
    out = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = Context(command, info_name=name, parent=ctx)
        out.append((sub.command_path, command, sub))
        if hasattr(command, "list_commands"):
            out += _commands(command, sub)
    return out


def _section(path: str, command: typer.core.TyperCommand, ctx: Context) -> list[str]:
    lines = [f"## `{path}`", "", _plain(command.help or command.short_help or ""), ""]
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    lines += ["```", usage, "```", ""]
    rows = [record for param in command.get_params(ctx) if param.name != "help"
            and (record := param.get_help_record(ctx)) is not None]
    if rows:
        lines += ["| argument or option | what it is |", "|---|---|"]
        lines += [f"| `{_cell(name)}` | {_cell(text)} |" for name, text in rows]
        lines.append("")
    return lines


def reference() -> str:
    """The text of docs/cli.md, from the commands as `kvbench --help` knows them."""
    group = typer.main.get_command(app)
    ctx = Context(group, info_name="kvbench")
    lines = [HEAD]
    commands = _commands(group, ctx)
    lines += [f"- [`{path}`](#{path.replace(' ', '-')})" for path, _, _ in commands] + [""]
    for path, command, sub in commands:
        lines += _section(path, command, sub)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DOC.write_text(reference())
    else:
        sys.stdout.write(reference())
