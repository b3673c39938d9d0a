"""Signals that end a run: Ctrl-C (SIGINT), and what `timeout`, a CI cancel and Slurm send
(SIGTERM, SIGHUP). Each becomes one `Interrupted` exception, so a run ends the same way
whichever arrived: marked `aborted`, its finished results kept, its temporary files removed
by the cleanup the exception unwinds through.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A run ended by signal `signum`; `exit_code` is the shell's 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.run_id: int | None = None  # the run it ended, once one had begun

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def watched() -> tuple[int, ...]:
    """The SIGNALS this process was not told to ignore: a SIGHUP that `nohup` (or a parent) set to be
    ignored stays ignored, so closing the terminal never ends a run started to outlive it."""
    return tuple(s for s in SIGNALS if signal.getsignal(s) is not signal.SIG_IGN)


@contextmanager
def signals_end_runs() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise `Interrupted` once; a second signal while
    the run is being closed is ignored, so the closing is not cut short. Outside the main thread
    (where Python cannot set handlers) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handler(signum: int, _frame) -> None:
        nonlocal raised
        if not raised:
            raised = True
            if _held is not None:  # inside `signals_deferred`: raised as that block ends
                _held.append(signum)
                return
            raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in watched()}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


_held: list[int] | None = None  # signals received inside `signals_deferred`, None outside it


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Within the block, a signal that ends runs is held and raised (`Interrupted`) as the block ends:
    a child process being started, or a file being made, is never left behind half-known (Popen
    interrupted after the fork leaves a child nobody can kill)."""
    global _held
    outer, _held = _held, []
    try:
        yield
    finally:
        held, _held = _held, outer
    if held:
        raise Interrupted(held[0])
