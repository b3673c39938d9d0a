"""The `kvbench` command: thin. Each module adds its commands to `app`; every decision lives in the
packages they call. `main` turns kvbench's own errors into one line and their exit status."""

from __future__ import annotations

import errno
import os
import sys
from typing import NoReturn

import typer

# Each module adds its commands, which `kvbench --help` lists in this order.
from kvbench.cli import host, run, judge, analysis, decide, replay, reports, crosscheck  # noqa: F401
from kvbench.cli.app import app
from kvbench.cli.common import err
from kvbench.errors import BadInput, CheckFailed, one_line
from kvbench.overall import Concluded
from kvbench.redact import redact

# What SQLite says of a file whose pages are damaged, wherever a query first meets one.
_DAMAGED = ("malformed", "file is not a database", "disk image")
# What SQLite and PostgreSQL say when the user may read the database but not change it.
_REFUSED_WRITE = ("readonly database", "read-only", "permission denied", "insufficientprivilege",
                  "insufficient privilege")
# Writing the output (a redirected stdout: `> /dev/full`, a full or over-quota disk) failed.
_CANNOT_WRITE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
# What SQLite and PostgreSQL say of a table dropped behind kvbench's back.
_MISSING_TABLE = ("no such table", "relation \"")  # PostgreSQL: relation "result" does not exist
# And of a column dropped (PostgreSQL: column run.heartbeat_at does not exist).
_MISSING_COLUMN = ("no such column", "column ")


def _paragraphs(group: typer.Typer) -> None:
    """Each command's help as flowing paragraphs: typer keeps a docstring's line breaks, which cut
    its sentences in --help at the source's line ends, whatever the terminal's width."""
    import inspect

    for info in group.registered_commands:
        doc = info.help or inspect.getdoc(info.callback) or ""
        info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
    for sub in group.registered_groups:
        _paragraphs(sub.typer_instance)


_paragraphs(app)


def main() -> None:
    """Run the command; kvbench's own errors and usage errors become one line with their exit status
    (2 for bad input, 1 for a failed check)."""
    from kvbench.hardware.identity import host_label

    written = sys.modules.get("kvbench.store.durable")
    if written is not None:  # called again in one process (tests): only this command's files are its concern
        written.WRITTEN.clear()
    try:
        host_label()  # a bad KVBENCH_HOST_ID is refused before any command creates anything
        code = app(standalone_mode=False)  # a typer.Exit comes back as its exit status here
        sys.stdout.flush()  # a full disk under a redirected stdout is met here, not at exit
        _written_files_intact()
    except Concluded as exc:  # a verdict: its line is the last, the word first
        _written_files_intact()
        err.print(one_line(exc.overall.line), markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except (BadInput, CheckFailed) as exc:
        prefix = "kvbench: error: " if isinstance(exc, BadInput) else "kvbench: "
        err.print(redact(one_line(f"{prefix}{exc}")), markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("kvbench: aborted", markup=False)
        sys.exit(130)
    except OSError as exc:
        if exc.errno not in _CANNOT_WRITE:
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's own flush fails no more
        _exit(f"cannot write the output: {exc.strerror} (standard output or a file it goes to)")
    except Exception as exc:
        if _database_error(exc):
            _database_exit(exc)
        kinds = {c.__name__ for c in type(exc).__mro__}  # typer's own (vendored) click exceptions
        if "NoArgsIsHelpError" in kinds:
            err.print(redact(exc.format_message() if hasattr(exc, "format_message") else str(exc)), markup=False)
            sys.exit(2)
        if "UsageError" not in kinds:
            raise
        ctx = getattr(exc, "ctx", None)  # unknown command or option, a value typer refused
        names = []
        while ctx is not None and ctx.parent is not None:  # `host merge`, not just `merge`
            names.insert(0, ctx.info_name)
            ctx = ctx.parent
        command = "".join(f" {n}" for n in names)
        err.print(redact(f"kvbench{command}: error: {one_line(exc.format_message())} (see kvbench{command} --help)"),
                  markup=False,
                  highlight=False, soft_wrap=True)
        sys.exit(2)
    if isinstance(code, int) and code:
        sys.exit(code)


def _written_files_intact() -> None:
    """The last check before an exit status: a database file this command wrote that was deleted or
    replaced after its last write's own check (while the tables printed) ends it with exit 2 and one
    line naming the file, never 0 over results nobody can reach."""
    durable = sys.modules.get("kvbench.store.durable")  # loaded if anything was written
    if durable is None:
        return
    try:
        durable.check_written_files()
    except BadInput as exc:
        _exit(str(exc))


def _database_error(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's or SQLAlchemy's DatabaseError, without importing SQLAlchemy (a
    fifth of a second) for commands that never open a database, such as `--version`."""
    from sqlite3 import DatabaseError as SQLiteError

    if isinstance(exc, SQLiteError):
        return True
    alchemy = sys.modules.get("sqlalchemy.exc")  # loaded already if it raised
    return alchemy is not None and isinstance(exc, alchemy.DatabaseError)


def _database_exit(exc: BaseException) -> None:
    """One line and status 2 for a database that refused a query, lacks a table or is damaged; returns
    for any other database error, which the caller raises."""
    text = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lower, statement = text.lower(), (getattr(exc, "statement", None) or "").lstrip().upper()
    from kvbench.store.connect import LOCK_WAIT_S, locked_out

    if locked_out(exc):  # another session held a lock this command needed for longer than the wait allows
        _exit(f"the database stayed locked by another session for {LOCK_WAIT_S:g} s ({redact(text)}): try again "
              "once it is free")
    if any(s in lower for s in _REFUSED_WRITE):
        needs = "read" if statement.startswith(("SELECT", "WITH")) else "write"
        _exit(f"the database refused the {'query' if needs == 'read' else 'change'} ({redact(text)}): this command "
              f"needs {needs} access to it")
    if any(s in lower for s in _MISSING_TABLE):
        _exit(f"the database lacks a kvbench table ({redact(text)}): it was changed behind kvbench's back; restore "
              "it from a copy or give another --db")
    if any(s in lower for s in _MISSING_COLUMN) and ("no such" in lower or "does not exist" in lower):
        _exit(f"the database lacks a kvbench column ({redact(text)}): it was changed behind kvbench's back; restore "
              "it from a copy or give another --db")
    if any(s in lower for s in _DAMAGED):
        _exit(f"the database is damaged ({redact(text)}): kvbench cannot read it; restore it from a copy or give "
              "another --db")


def _exit(message: str) -> NoReturn:
    err.print(redact(one_line(f"kvbench: error: {message}")), markup=False, highlight=False, soft_wrap=True)
    sys.exit(2)
