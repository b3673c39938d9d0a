"""Reading a file a user gave (a run export or a model's config.json in JSON; a suite or acceptance
rules in TOML): every way it can be wrong is one `BadInput` naming the file — missing, a folder,
not a regular file (`/dev/zero` would be read until memory runs out), larger than its limit,
unreadable, not UTF-8, not parseable, or nested too deeply for Python to hold.

And where kvbench's own files live (`suites/` and `kernels/`, in a wheel or in a source checkout):
the shipped suites and rules are read through the same functions as a user's."""

from __future__ import annotations

import json
import math
import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from kvbench.errors import BadInput

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder `name` (`suites` or `kernels`): packaged copy first, then the checkout's."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kvbench data folder '{name}' is missing from this installation")


def suites_dir() -> Path:
    return data_dir("suites")


def kernels_dir() -> Path:
    return data_dir("kernels")


# A suite, a rules file or a config.json is a few KiB; a run export carries every sample of every case.
TEXT_MAX_BYTES = 4 << 20
EXPORT_MAX_BYTES = 256 << 20


def read_text_file(path: Path, where: str, kind: str, max_bytes: int = TEXT_MAX_BYTES) -> str:
    """The text of `path`, UTF-8 as JSON and TOML are (`kind` names the format in the error): a
    regular file of at most `max_bytes` bytes."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode) and not path.is_dir():  # a pipe would block the open itself
            raise BadInput(f"{where} is not a regular file (a device, pipe or socket): give a {kind} file")
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)  # a file growing while read stops at the limit too
        if len(data) > max_bytes:
            raise BadInput(f"{where} is larger than {max_bytes >> 20} MiB: too large for a kvbench {kind} input")
        return data.decode("utf-8")
    except FileNotFoundError:
        raise BadInput(f"{where} does not exist") from None
    except IsADirectoryError:
        raise BadInput(f"{where} is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{where} is not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}): "
                       f"{kind} is UTF-8") from None
    except OSError as exc:
        raise BadInput(f"{where} cannot be read: {exc.strerror or exc}") from None


def read_json_file(path: Path, where: str, max_bytes: int = TEXT_MAX_BYTES) -> Any:
    """The parsed contents of `path`; `where` names it in errors (e.g. "export file 'x.json'")."""
    text = read_text_file(path, where, "JSON", max_bytes)

    def non_finite(word: str) -> float:  # Python reads NaN and Infinity, which JSON does not have
        raise BadInput(f"{where} holds {word}, which is not a JSON number: kvbench refuses non-finite numbers")

    def number(word: str) -> float:
        value = float(word)
        return value if math.isfinite(value) else non_finite(word)  # 1e999 reads as infinity

    try:
        return json.loads(text, parse_constant=non_finite, parse_float=number)
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
