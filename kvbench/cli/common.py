"""What every command shares: the consoles, the database option, `key=value` pairs, file-or-stdout
writes, fractions, and run documents by reference (id, latest, baseline, or an export file)."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from kvbench.errors import BadInput, one_line
from kvbench.overall import Overall
from kvbench.redact import redact

# Piped output keeps whole rows (80 columns would fold every parameter list), unless COLUMNS says
# how wide the reader is: rich then takes it, on a terminal or not.
_WIDE = None if os.environ.get("COLUMNS", "").strip().isdigit() else 200
out = Console(width=None if sys.stdout.isatty() else _WIDE)
err = Console(stderr=True, width=None if sys.stderr.isatty() else _WIDE)

DbOption = Annotated[str | None, typer.Option("--db", metavar="URL", help="results database (default: $KVBENCH_DB, "
                                                                          "else results/kvbench.sqlite)")]


JsonOption = Annotated[str | None, typer.Option("--json", metavar="FILE|-", help="write the answer as JSON to FILE, "
                                                 "or - for standard output alone (shapes: docs/json-outputs.md)")]


PeaksOption = Annotated[str | None, typer.Option("--peaks", metavar="FILE", help="your own peaks (TOML, as "
                                                 "kvbench/hardware/peaks.toml: \\[dram] gbps and source, \\[\\[hbm]] …), "
                                                 "labelled as yours; default $KVBENCH_PEAKS")]


def use_peaks(path: str | None) -> None:
    """Check the user's peaks file now (one line if it is wrong) and make it the one every peak lookup
    of this process and its children reads (KVBENCH_PEAKS)."""
    from kvbench.hardware.peaks import PEAKS_ENV, user_peaks

    path = path or os.environ.get(PEAKS_ENV) or None
    if path is not None:
        user_peaks(path)
        os.environ[PEAKS_ENV] = str(Path(path).resolve())


def write_json(doc: Any, target: str) -> None:
    """A command's `--json` document to `target` (`-`: standard output), indented, times as ISO 8601."""
    import json

    write_text(json.dumps(doc, indent=2, default=json_value) + "\n", target)


def json_value(x: Any) -> Any:
    """What `json` cannot write itself: a time as ISO 8601, a numpy scalar as its Python value (a numpy
    bool would otherwise become the string "False"); anything else as text."""
    if hasattr(x, "isoformat"):
        return x.isoformat()
    if type(x).__module__ == "numpy" and hasattr(x, "item"):
        return x.item()
    return str(x)


def pairs(items: list[str] | None, option: str) -> dict[str, str]:
    """`["a=1", "b=2"]` → {"a": "1", "b": "2"}; a malformed item is bad input naming `option`."""
    result = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"bad {option} '{item}': expected key=value")
        name = tag_key(key, option)
        if name in result and result[name] != redact(value.strip()):  # the last one would win, silently
            raise BadInput(f"{option} {name} given twice ({result[name]} and {redact(value.strip())}): give it once"
                           + ("; a sweep of several values is a suite's list" if option == "--set" else ""))
        result[name] = redact(value.strip())  # a URL in the wrong slot is stored without its password
    return result


def tag_key(key: str, option: str = "tag") -> str:
    """A tag's or parameter's name, stripped: not empty, no '=' and no space inside."""
    name = redact(key.strip())
    if not name or "=" in name or any(c.isspace() for c in name) or len(name) > 64:
        raise BadInput(f"bad {option} name '{key}': give a name of at most 64 characters without spaces or '=' (e.g. baseline)")
    return name


def write_text(text: str | bytes, target: str) -> None:
    """`text` to standard output for `-`, else to the file `target` (said on stderr): whole or not at
    all — a full disk leaves the old file (or none), never an empty one, and is one line of error."""
    data = text.encode() if isinstance(text, str) else text
    if target == "-":
        sys.stdout.buffer.write(data) if isinstance(text, bytes) else sys.stdout.write(text)
        return
    path = Path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # every output path makes its folders (check_writable)
        if path.exists() and not path.is_file():  # a device or a pipe: written in place
            path.write_bytes(data)
        else:
            temp = path.with_name(f".{path.name}.kvbench-{os.getpid()}.tmp")
            try:
                temp.write_bytes(data)
                os.replace(temp, path)
            finally:
                temp.unlink(missing_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot write '{target}': {exc.strerror or exc}") from None
    err.print(f"wrote {target}")


def check_writable(target: str | None, option: str, db: str | None = None, inputs: list[str] | None = None) -> None:
    """Refuse, before any work, an output file that cannot be written (`-` is standard output), or
    that is the database `db`, one of the command's `inputs`, or any SQLite database: an output
    must never overwrite what it was made from."""
    if target is None or target == "-":
        return
    from kvbench.store.connect import SQLITE_MAGIC, default_url, sqlite_path  # SQLAlchemy: only for a file

    if not target.strip():
        raise BadInput(f"bad {option} '': give a file name, or - for standard output")
    path = Path(target)
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # Path.resolve would raise RuntimeError on it below
            raise BadInput(f"bad {option} '{target}': a loop of symbolic links; give a file name") from None
    if path.is_dir():
        raise BadInput(f"bad {option} '{target}': it is a directory; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    # a folder that does not exist yet is made when the output is written (write_text): here the
    # nearest folder that exists must be one, and writable, so the refusal comes before the work
    existing = parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise BadInput(f"bad {option} '{target}': '{existing}' is not a folder, so folder '{parent}' cannot be made")
    if path.exists() and not os.access(path, os.W_OK):
        raise BadInput(f"bad {option} '{target}': not writable")
    # The output is written through a temporary file beside it: make one now, so that a read-only or
    # pseudo filesystem (/proc) is refused before the work, not after it.
    try:
        tempfile.NamedTemporaryFile(dir=existing, prefix=".kvbench-probe-").close()
    except OSError as exc:
        made = "" if existing == parent else f" (folder '{parent}' would be made in '{existing}')"
        raise BadInput(f"bad {option} '{target}': not writable{made} ({exc.strerror})") from None
    database = sqlite_path(db or default_url())
    if database is not None and path.resolve() == database.resolve():
        raise BadInput(f"bad {option} '{target}': that is the results database; give another file")
    for given in inputs or []:
        if Path(given).is_file() and path.resolve() == Path(given).resolve():
            raise BadInput(f"bad {option} '{target}': that is the input '{given}'; give another file")
    if path.is_file():
        with path.open("rb") as f:
            if f.read(16) == SQLITE_MAGIC:
                raise BadInput(f"bad {option} '{target}': it is an SQLite database; kvbench does not overwrite one")


def fraction(text: str, option: str) -> float:
    """`5%` or `0.05` → 0.05; bad input naming `option` otherwise."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise BadInput(f"bad {option} '{text}': give a percentage such as 5%") from None
    if value != value:
        raise BadInput(f"bad {option} '{text}': not a number; give a percentage such as 5%")
    if not 0 <= value < 1:
        hint = (f" (a bare number is a fraction: write {text}% or {value / 100:g})"
                if not text.endswith("%") and 1 <= value < 100 else "")
        raise BadInput(f"bad {option} '{text}': must be between 0% and 100%{hint}")
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

    return [load_document(ref, store_factory, this_host_ids) for ref in refs]


def judged_documents(refs: list[str], db: str | None) -> list[dict]:
    """`documents` for a command that judges against peaks: each ok result's peak taken again from the
    user's peaks file where one is in force (--peaks / KVBENCH_PEAKS; kvbench/analyze/accept/user_peaks.py)."""
    docs = documents(refs, db)
    if not os.environ.get("KVBENCH_PEAKS"):  # hardware.peaks.PEAKS_ENV: none in force, nothing more to load
        return docs
    from kvbench.analyze.accept.user_peaks import with_user_peaks

    return [with_user_peaks(doc) for doc in docs]


def conclude(overall: Overall, allow_incomplete: bool = False) -> None:
    """End a judging command: its overall verdict as the last line, the word first (on stderr, so a
    `--json -` or Markdown document on stdout stays whole), and its exit status (0, 1 or 3)."""
    err.print(one_line(overall.line), markup=False, highlight=False, soft_wrap=True)
    status = overall.exit_status(allow_incomplete)
    if status:
        raise typer.Exit(status)


def existing_store(db: str | None):
    """The store at `db`; for the default embedded file, None when no run has created it yet
    (a command that only reads must not leave a database behind)."""
    from kvbench.store import DEFAULT_PATH, default_url, open_store

    if db is None and default_url() == f"sqlite:///{DEFAULT_PATH}" and not DEFAULT_PATH.exists():
        return None
    return open_store(db, read_only=True)


def history_store(db: str | None, *run_refs: str):
    """The store the runs' history is read from (`existing_store`), or None where every run is an export
    file and `db` names a database that does not exist or cannot be reached: exports need no database, and
    asking for their history must not fail for want of one (standard error says it was not read)."""
    from kvbench.store import default_url
    from kvbench.store.connect import sqlite_path

    if not all(Path(ref).is_file() for ref in run_refs):
        return existing_store(db)
    path = sqlite_path(db or default_url())
    try:
        if path is None or path.exists():
            return existing_store(db)
        if db or os.environ.get("KVBENCH_DB"):  # a database named that is not there: said, not an error
            raise BadInput(f"no kvbench database at '{redact(db or default_url())}'")
    except BadInput as exc:
        err.print(f"kvbench: note: no history read ({exc}): judged on the exports alone", markup=False,
                  highlight=False, soft_wrap=True)
    return None


def this_host_ids(store) -> list[str]:
    """Every id this box's runs are under in `store` (its own, and an older kvbench's not merged yet)."""
    from kvbench.run.hosts import this_host_ids as ids
    from kvbench.run.this_host import host_facts

    return ids(store, host_facts(dram=False))  # DIMMs are no part of a host's identity
