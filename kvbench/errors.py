"""Errors that map to the CLI's exit codes (DESIGN.md, Contracts)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class BadInput(Exception):
    """Bad input from the user: unknown name, malformed size or suite, unreachable database.

    The CLI prints the message as one line and exits with status 2.
    """

    exit_code = 2


class CheckFailed(Exception):
    """An acceptance rule or regression check failed: exit status 1."""

    exit_code = 1


class IntegrityError(Exception):
    """The bytes a transfer moved are not the bytes that were expected."""


class Unavailable(Exception):
    """A benchmark, executor or memory kind cannot run on this host; the message says why."""


def unknown_name(kind: str, name: str, known: Iterable[str], list_all: bool = False) -> BadInput:
    """A `BadInput` for an unknown name that suggests the closest known one (and lists all if asked)."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    if list_all or not close:
        hint += f" (known: {', '.join(known)})"
    return BadInput(f"unknown {kind} '{name}'{hint}")


def one_line(text: str) -> str:
    """`text` with line breaks and other control characters written as escapes (`\\n`, `\\x1b`):
    an error is one line however it was made (a value from the environment may hold a newline)."""
    return "".join(c if c == "\t" or (ord(c) >= 32 and ord(c) != 127) else repr(c)[1:-1] for c in text)
