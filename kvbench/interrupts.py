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
            raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)
