"""`kvbench run --repeat N`: the same selection run N times, each in a fresh process, as N runs.

One run's samples show only the noise within that run; back-to-back runs of a case differ by much
more (asv repeats across processes for this reason). N runs give `compare` the case's between-run
noise at once, instead of the allowance it assumes while a host has fewer than 3 earlier runs.

Each repeat is `python -m kvbench.run.suite_repeat` with the request as JSON on its stdin; it answers
one JSON line on stdout. A signal the parent receives (SIGTERM from `timeout` or a CI cancel,
SIGHUP, SIGINT) is passed on to the running repeat, which ends its run as `aborted` with its
finished results kept; the parent then stops too, with the same status. A repeat killed outright
has its run marked `crashed` by the parent; a parent killed outright takes its repeat with it
(the kernel sends the repeat SIGTERM when its parent dies: it ends its run as `aborted`, quietly).
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from rich.console import Console

from kvbench.errors import BadInput, CheckFailed, one_line
from kvbench.run.interrupts import SIGNALS, Interrupted, signals_end_runs, watched
from kvbench.run.lifecycle import boot_id, pid_namespace, sweep_temp_files
from kvbench.run.suite_run import RunOutcome, RunRequest, plan_request, run_suite
from kvbench.store import open_store

MAX_REPEAT = 100
PARENT_ENV = "KVBENCH_REPEAT_PARENT"  # the parent's pid, for the repeat to check it is still there
PR_SET_PDEATHSIG = 1


def run_repeated(request: RunRequest, times: int, progress: Console) -> list[RunOutcome]:
    """Run `request` `times` times, one fresh process each, every run tagged `repeat=i/times`.

    Bad input raises `BadInput` before any process starts; a signal raises `Interrupted` once the
    running repeat has ended its run; a repeat that dies otherwise raises `CheckFailed`.
    """
    if not 1 <= times <= MAX_REPEAT:
        raise BadInput(f"bad --repeat {times}: choose 1 to {MAX_REPEAT}")
    plan_request(request)
    finished = []
    with signals_end_runs():  # between repeats; while one runs, signals go on to it
        for i in range(1, times + 1):
            repeat = dataclasses.replace(request, tags={**request.tags, "repeat": f"{i}/{times}"})
            progress.print(f"repeat {i}/{times}: a fresh process")
            finished.append(_run_in_child(repeat, f"repeat {i}/{times}"))
    store = open_store(request.db, existing=True)
    return [RunOutcome(run_id, store, failed) for run_id, failed in finished]


def _run_in_child(request: RunRequest, label: str) -> tuple[int, int]:
    """(run id, failed cases) of `request` run by a child process."""
    child = subprocess.Popen([sys.executable, "-m", "kvbench.run.suite_repeat"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, PARENT_ENV: str(os.getpid())})
    with _passed_on(child) as received:
        answer, _ = child.communicate(json.dumps(dataclasses.asdict(request)))
    code = child.returncode
    signum = received[0] if received else (-code if code < 0 else code - 128 if code - 128 in SIGNALS else None)
    lines = [line for line in answer.splitlines() if line.startswith("{")]
    reply = json.loads(lines[-1]) if lines else {}
    if signum in SIGNALS:
        interrupted = Interrupted(signum)
        interrupted.run_id = reply.get("aborted_run", reply.get("run_id"))
        raise interrupted
    if code == 0 and "run_id" in reply:
        return int(reply["run_id"]), int(reply["failed"])
    if "error" in reply:
        raise BadInput(reply["error"])
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"status {code}"
    run_id = _mark_orphan_run(request.db, child.pid, f"its process {child.pid} ended with {how} "
                                                     "(found by its --repeat parent)")
    raise CheckFailed(f"{label}: its process ended with {how}; "
                      + (f"run {run_id} is marked crashed, its finished results kept, its files removed" if run_id is not None
                         else "no run of it was left running"))


def _mark_orphan_run(db: str | None, pid: int, reason: str) -> int | None:
    """Mark the run process `pid` (a repeat that died without closing it) left running `crashed`, and
    remove the files it left; its id, None when it left none (it died before beginning one, or its database cannot be opened)."""
    try:
        store = open_store(db, existing=True)
    except BadInput:
        return None
    here = (boot_id(), pid_namespace())
    try:
        for run in store.runs(status="running"):
            if run["pid"] == pid and (run["boot_id"], (run["system_state"] or {}).get("pid_namespace")) == here:
                store.mark_crashed([run["id"]], reason)
                dirs = (run["system_state"] or {}).get("temp_dirs") or []
                sweep_temp_files({tempfile.gettempdir(), *dirs}, {pid})
                return int(run["id"])
        return None
    finally:
        store.dispose()


@contextmanager
def _passed_on(child: subprocess.Popen) -> Iterator[list[int]]:
    """Within the block, SIGINT, SIGTERM and SIGHUP go on to `child`; yields the signals received."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, _frame) -> None:
        received.append(signum)
        with suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {s: signal.signal(s, handler) for s in watched()}  # nohup's ignored SIGHUP stays ignored
    try:
        yield received
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _die_with_parent() -> None:
    """Ask the kernel for SIGTERM when the parent dies (Linux), and stop now if it already has: a
    repeat outliving a killed parent would measure for nobody."""
    parent = os.environ.get(PARENT_ENV)
    with suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if parent and os.getppid() != int(parent):
        sys.exit(128 + signal.SIGTERM)


def _answer(reply: dict) -> None:
    """The one JSON line for the parent; nothing (and no traceback) when the parent is gone."""
    try:
        print(json.dumps(reply), flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit: quiet too


def child_main() -> int:
    """One repeat: the request from stdin, progress on stderr, `{"run_id", "failed"}` on stdout."""
    _die_with_parent()
    fields = json.loads(sys.stdin.read())
    request = RunRequest(**{**fields, "benches": tuple(fields["benches"]), "cases": tuple(fields.get("cases", ()))})
    try:
        outcome = run_suite(request, Console(stderr=True))
    except Interrupted as exc:
        _answer({"aborted_run": exc.run_id})
        return exc.exit_code
    except BadInput as exc:
        _answer({"error": one_line(str(exc))})
        return 2
    _answer({"run_id": outcome.run_id, "failed": outcome.failed})
    return 0


if __name__ == "__main__":
    try:
        sys.exit(child_main())
    except KeyboardInterrupt:
        sys.exit(128 + signal.SIGINT)
