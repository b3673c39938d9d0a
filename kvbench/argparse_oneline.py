"""argparse for kvbench's entry points (`python -m kvbench.launch`, `python -m kvbench.peer`), with
a usage error as one line naming the bad input, like every other kvbench error."""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def port(text: str) -> int:
    """A TCP port number, 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad port '{text}': expected a number from 1 to 65535") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"bad port {value}: must be from 1 to 65535")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad number '{text}': expected a whole number of at least 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"bad number {value}: must be at least 1")
    return value


def seconds(text: str) -> float:
    """A finite, positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad seconds '{text}': expected a number such as 120") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"bad seconds '{text}': must be a finite number above 0")
    return value
