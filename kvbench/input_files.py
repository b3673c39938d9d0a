"""Reading a file a user gave (a run export or a model's config.json in JSON; a suite or acceptance
rules in TOML): every way it can be wrong is one `BadInput` naming the file — missing, a folder,
unreadable, not UTF-8, not parseable, or nested too deeply for Python to hold."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from kvbench.errors import BadInput


def read_text_file(path: Path, where: str, kind: str) -> str:
    """The text of `path`, UTF-8 as JSON and TOML are (`kind` names the format in the error)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{where} does not exist") from None
    except IsADirectoryError:
        raise BadInput(f"{where} is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{where} is not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}): "
                       f"{kind} is UTF-8") from None
    except OSError as exc:
        raise BadInput(f"{where} cannot be read: {exc.strerror or exc}") from None


def read_json_file(path: Path, where: str) -> Any:
    """The parsed contents of `path`; `where` names it in errors (e.g. "export file 'x.json'")."""
    text = read_text_file(path, where, "JSON")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where} is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadInput(f"{where} is nested too deeply to be a kvbench input") from None


def read_toml_file(path: Path, where: str) -> tuple[str, dict[str, Any]]:
    """(text, parsed table) of `path`; a byte-order mark, as some editors write one, is skipped."""
    text = read_text_file(path, where, "TOML")
    try:
        return text, tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{where}: TOML syntax error: {exc}") from None
