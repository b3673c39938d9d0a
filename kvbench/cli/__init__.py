"""The `kvbench` command: thin. Each module adds its commands to `app`; every decision lives in the
packages they call. `main` turns kvbench's own errors into one line and their exit status."""

from __future__ import annotations

import sys

import typer

# Each module adds its commands, which `kvbench --help` lists in this order.
from kvbench.cli import host, run, judge, analysis, decide, reports, crosscheck  # noqa: F401
from kvbench.cli.app import app
from kvbench.cli.common import err
from kvbench.errors import BadInput, CheckFailed, one_line

# What SQLite says of a file whose pages are damaged, wherever a query first meets one.
_DAMAGED = ("malformed", "file is not a database", "disk image")
# What SQLite and PostgreSQL say when the user may read the database but not change it.
_REFUSED_WRITE = ("readonly database", "read-only", "permission denied", "insufficientprivilege",
                  "insufficient privilege")


def main() -> None:
    """Run the command; kvbench's own errors and usage errors become one line with their exit status
    (2 for bad input, 1 for a failed check)."""
    from sqlite3 import DatabaseError as SQLiteError

    from sqlalchemy.exc import DatabaseError

    from kvbench.hardware.identity import host_label

    try:
        host_label()  # a bad KVBENCH_HOST_ID is refused before any command creates anything
        code = app(standalone_mode=False)  # a typer.Exit comes back as its exit status here
    except (BadInput, CheckFailed) as exc:
        prefix = "kvbench: error: " if isinstance(exc, BadInput) else "kvbench: "
        err.print(one_line(f"{prefix}{exc}"), markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except (DatabaseError, SQLiteError) as exc:
        text = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if any(s in text.lower() for s in _REFUSED_WRITE):
            from kvbench.store.connect import redact

            err.print(one_line(f"kvbench: error: the database refused the change ({redact(text)}): this command "
                               "needs write access to it"), markup=False, highlight=False, soft_wrap=True)
            sys.exit(2)
        if not any(s in text.lower() for s in _DAMAGED):
            raise
        err.print(one_line(f"kvbench: error: the database is damaged ({text}): kvbench cannot read it; restore it "
                           "from a copy or give another --db"), markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("kvbench: aborted", markup=False)
        sys.exit(130)
    except Exception as exc:
        kinds = {c.__name__ for c in type(exc).__mro__}  # typer's own (vendored) click exceptions
        if "NoArgsIsHelpError" in kinds:
            err.print(exc.format_message() if hasattr(exc, "format_message") else str(exc), markup=False)
            sys.exit(2)
        if "UsageError" not in kinds:
            raise
        ctx = getattr(exc, "ctx", None)  # unknown command or option, a value typer refused
        names = []
        while ctx is not None and ctx.parent is not None:  # `host merge`, not just `merge`
            names.insert(0, ctx.info_name)
            ctx = ctx.parent
        command = "".join(f" {n}" for n in names)
        err.print(f"kvbench{command}: error: {exc.format_message()} (see kvbench{command} --help)", markup=False,
                  highlight=False, soft_wrap=True)
        sys.exit(2)
    if isinstance(code, int) and code:
        sys.exit(code)
