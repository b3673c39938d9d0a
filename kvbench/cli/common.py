"""What every command shares: the consoles, the database option, `key=value` pairs, file-or-stdout
writes, fractions, and run documents by reference (id, latest, baseline, or an export file)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kvbench.errors import BadInput

# Piped output keeps whole rows: 80 columns would fold every parameter list.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

DbOption = Annotated[str | None, typer.Option("--db", help="SQLAlchemy URL; default $KVBENCH_DB or "
                                                           "sqlite:///results/kvbench.sqlite")]


def pairs(items: list[str] | None, option: str) -> dict[str, str]:
    """`["a=1", "b=2"]` → {"a": "1", "b": "2"}; a malformed item is bad input naming `option`."""
    result = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"bad {option} '{item}': expected key=value")
        result[key.strip()] = value.strip()
    return result


def write_text(text: str, target: str) -> None:
    """`text` to standard output for `-`, else to the file `target` (said on stderr)."""
    if target == "-":
        sys.stdout.write(text)
    else:
        Path(target).write_text(text)
        err.print(f"wrote {target}")


def check_writable(target: str | None, option: str) -> None:
    """Refuse, before any work, an output file that cannot be written (`-` is standard output)."""
    if not target or target == "-":
        return
    path = Path(target)
    if path.is_dir():
        raise BadInput(f"bad {option} '{target}': it is a directory; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"bad {option} '{target}': folder '{parent}' does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise BadInput(f"bad {option} '{target}': not writable")


def fraction(text: str, option: str) -> float:
    """`5%` or `0.05` → 0.05; bad input naming `option` otherwise."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise BadInput(f"bad {option} '{text}': give a percentage such as 5%") from None
    if not 0 <= value < 1:
        raise BadInput(f"bad {option} '{text}': must be between 0% and 100%")
    return value


def documents(refs: list[str], db: str | None) -> list[dict]:
    """Run documents for run ids, `latest`, `baseline` or export files; the store opens only if needed."""
    from kvbench.analyze.runs import load_document
    from kvbench.store import open_store

    store = None

    def store_factory():
        nonlocal store
        store = store or open_store(db, read_only=True)
        return store

    return [load_document(ref, store_factory) for ref in refs]


def existing_store(db: str | None):
    """The store at `db`; for the default embedded file, None when no run has created it yet
    (a command that only reads must not leave a database behind)."""
    from kvbench.store import DEFAULT_PATH, default_url, open_store

    if db is None and default_url() == f"sqlite:///{DEFAULT_PATH}" and not DEFAULT_PATH.exists():
        return None
    return open_store(db, read_only=True)


def this_host_ids(store) -> list[str]:
    """Every id this box's runs are under in `store` (its own, and an older kvbench's not merged yet)."""
    from kvbench.hosts import this_host_ids as ids
    from kvbench.this_host import host_facts

    return ids(store, host_facts(dram=False))  # DIMMs are no part of a host's identity
