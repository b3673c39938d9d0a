"""Loading an optional library (Mooncake, NIXL, cupy, torch, NVML, cuFile's bindings) that may be
installed but broken: a wheel whose shared library lacks libibverbs raises OSError, another raises
RuntimeError or even SyntaxError, and one may block on import (a driver call that never returns).

`load(name)` imports `name` in a helper thread and waits at most `KVBENCH_IMPORT_TIMEOUT_S` seconds
(30 by default). Anything but a clean import comes back as `ImportError` (`NotLoaded`) whose text
names the module and what went wrong in one line, so every caller's `except ImportError` turns it
into a skipped case with its reason, never a traceback or a run that hangs. A module that timed out
is never imported again by this process (its import still holds the module's lock).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from types import ModuleType

TIMEOUT_ENV = "KVBENCH_IMPORT_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 30.0
_hung: set[str] = set()


class NotLoaded(ImportError):
    """An optional module that is installed (or half-installed) but did not load."""


def timeout_s() -> float:
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def load(name: str) -> ModuleType:
    """`importlib.import_module(name)`, bounded in time; any failure raised as ImportError (a missing
    module as ModuleNotFoundError, as Python raises it; anything else as `NotLoaded` naming it)."""
    if name in sys.modules and sys.modules[name] is not None:
        return sys.modules[name]
    if name.partition(".")[0] in _hung or name in _hung:
        raise NotLoaded(f"{name} did not finish loading earlier in this process (over {timeout_s():g} s)", name=name)
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["module"] = importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001  (a module may raise anything, SystemExit included)
            box["error"] = exc

    worker = threading.Thread(target=target, name=f"kvbench-load-{name}", daemon=True)
    worker.start()
    worker.join(timeout_s())
    if worker.is_alive():
        _hung.add(name)
        raise NotLoaded(f"{name} did not finish loading in {timeout_s():g} s (set {TIMEOUT_ENV} to wait longer)",
                        name=name)
    error = box.get("error")
    if isinstance(error, ValueError) and "main thread" in str(error) and threading.current_thread() is threading.main_thread():
        sys.modules.pop(name, None)  # a module that installs a signal handler as it loads: loaded here instead
        target()
        error = box.get("error") if "module" not in box else None
    if error is None:
        return box["module"]  # type: ignore[return-value]
    if isinstance(error, ModuleNotFoundError) and error.name and name.startswith(error.name):
        raise error  # not installed: the caller says so in its own words
    if isinstance(error, KeyboardInterrupt):
        raise error
    raise NotLoaded(f"{name} is installed but does not load: {_line(error)}", name=name) from None


def why(exc: ImportError, missing: str) -> str:
    """One line for a failed `load`: `missing` (the caller's words for "not installed") for a module
    that is not there, else what went wrong loading it."""
    if isinstance(exc, ModuleNotFoundError) and not isinstance(exc, NotLoaded):
        return missing
    return str(exc) if isinstance(exc, NotLoaded) else _line(exc)
