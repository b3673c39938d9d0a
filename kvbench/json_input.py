"""Reading a JSON file a user gave (a run export, a model's config.json): every way it can be wrong
is one `BadInput` naming the file — missing, a folder, unreadable, not UTF-8, not JSON, or nested
too deeply for Python to hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvbench.errors import BadInput


def read_json_file(path: Path, where: str) -> Any:
    """The parsed contents of `path`; `where` names it in errors (e.g. "export file 'x.json'")."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"{where} does not exist") from None
    except IsADirectoryError:
        raise BadInput(f"{where} is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{where} is not UTF-8 text (byte {exc.start}): JSON is UTF-8") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{where} is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadInput(f"{where} is nested too deeply to be a kvbench input") from None
    except OSError as exc:
        raise BadInput(f"{where} cannot be read: {exc.strerror or exc}") from None
