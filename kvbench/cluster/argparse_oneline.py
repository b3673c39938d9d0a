"""argparse for kvbench's entry points (`python -m kvbench.cluster.launch`, `python -m kvbench.cluster.peer`), with
a usage error as one line naming the bad input, like every other kvbench error."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

from kvbench.errors import one_line
from kvbench.redact import redact


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse echoes what was typed (`unrecognized arguments: --db postgresql://kv:PASSWORD@…`)
        print(redact(one_line(f"{self.prog}: error: {message}")), file=sys.stderr)
        sys.exit(2)


def _checked(text: str, convert, what: str, expected: str, valid, rule: str):
    """`convert(text)` when it converts and `valid` holds, else argparse's type error, one line."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad {what} '{text}': expected {expected}") from None
    if not valid(value):
        raise argparse.ArgumentTypeError(f"bad {what} {text}: must be {rule}")
    return value


def port(text: str) -> int:
    """A TCP port number, 1 to 65535."""
    return _checked(text, int, "port", "a number from 1 to 65535", lambda v: 1 <= v <= 65535, "from 1 to 65535")


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    return _checked(text, int, "number", "a whole number of at least 1", lambda v: v >= 1, "at least 1")


def samples(text: str) -> int:
    """Samples per case, 5 to 10,000: what a suite and `kvbench run --samples` take."""
    from kvbench.plan.suite import MAX_SAMPLES, MIN_SAMPLES

    return _checked(text, int, "samples", f"a whole number from {MIN_SAMPLES} to {MAX_SAMPLES}",
                    lambda v: MIN_SAMPLES <= v <= MAX_SAMPLES, f"from {MIN_SAMPLES} to {MAX_SAMPLES}")


def seconds(text: str) -> float:
    """A finite, positive number of seconds."""
    return _checked(text, float, "seconds", "a number such as 120", lambda v: math.isfinite(v) and v > 0,
                    "a finite number above 0")
