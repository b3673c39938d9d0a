"""A peer process that ends with the process that started it.

A target read its parent's pid when it started serving; a parent killed before that line left it reading
1 (init, or a subreaper), and with `--stay` it then served forever, holding its port, so the next launch
on that host failed. Two guards, both needed: the kernel's PR_SET_PDEATHSIG (SIGTERM to this process the
moment its parent dies; Linux only, and only for a parent that dies *after* it was set), and the parent's
pid given on the command line (`--parent`), checked after the signal is armed, which catches a parent
that died before.

The kernel's "parent" is the thread that started this process: a peer is started from
its parent's main thread, which lives as long as that process does."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send `sig` to this process when its parent dies; False where it cannot (not
    Linux, no libc). Safe in a `preexec_fn` (no allocation beyond ctypes' own)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def parent_gone(parent: int | None) -> bool:
    """Whether the parent this process was started by (`parent`, its pid; None: not known) is gone: this
    process was handed to another (init, a subreaper) since."""
    return bool(parent) and os.getppid() != parent
