"""`kvbench ARGS` run inside the test process, answering as `tests.conftest.run_cli` does (a
`CompletedProcess` with the exit status, standard output and standard error), for the many tests that
judge what a command says and not the process boundary: each `kvbench` process costs its imports and
numba's cache load (seconds on the busy 2-core CI box), which dominated the CLI test files.

Tests about the boundary itself (the status a shell sees, signals, real file descriptors, what happens
while modules load) keep `run_cli`. Nothing a command changes in this process outlives the call: the
environment, the working directory, signal handlers, the consoles' settings and `sys.argv` are put
back, and the database engines it made are disposed of, so a test cannot depend on the one before it."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)


@contextlib.contextmanager
def _process_state_kept() -> Iterator[None]:
    """Whatever the command changes in this process (the environment: `--peaks` sets KVBENCH_PEAKS,
    NIXL UCX_LOG_FILE; signal handlers; the working directory; `sys.argv`) is as it was afterwards."""
    env = dict(os.environ)
    handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    cwd, argv = os.getcwd(), sys.argv
    try:
        yield
    finally:
        for key in set(os.environ) - set(env):
            del os.environ[key]
        for key, value in env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
        for s, handler in handlers.items():
            if signal.getsignal(s) is not handler:
                signal.signal(s, handler)
        os.chdir(cwd)
        sys.argv = argv


@contextlib.contextmanager
def _consoles_as_in_a_pipe() -> Iterator[None]:
    """kvbench's two consoles set their width and colours when `kvbench.cli.common` is imported (a pipe:
    200 columns unless COLUMNS says, no colour); a pytest run from a terminal imports it on a tty, so
    they are set here as a `kvbench` process writing to a pipe sets them, and put back afterwards."""
    from kvbench.cli import common

    saved = [(c, c._width, c._color_system) for c in (common.out, common.err)]
    columns = os.environ.get("COLUMNS", "").strip()
    width = int(columns) if columns.isdigit() else 200
    try:
        for console, _, _ in saved:
            console._width, console._color_system = width, None
        yield
    finally:
        for console, w, colours in saved:
            console._width, console._color_system = w, colours


@contextlib.contextmanager
def _engines_closed() -> Iterator[None]:
    """Every database engine the command creates is disposed of afterwards, as a process's exit closes
    its connections: commands leave their stores open, and PostgreSQL connections left idle in this
    process would pile up on a server other test runs share."""
    import sqlalchemy

    made: list[Any] = []
    real = sqlalchemy.create_engine

    def create_engine(*args: Any, **kwargs: Any) -> Any:
        made.append(real(*args, **kwargs))
        return made[-1]

    sqlalchemy.create_engine = create_engine
    try:
        yield
    finally:
        sqlalchemy.create_engine = real
        for engine in made:
            engine.dispose()


def _stream() -> io.TextIOWrapper:
    """A text stream over bytes, as a process's standard output is (`sys.stdout.buffer` works)."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


def _read(stream: io.TextIOWrapper) -> str:
    """What `subprocess.run(..., text=True)` would read of it: decoded, universal newlines."""
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def run_in_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run `kvbench ARGS` in this process from the repository's root, with `env` added to the
    environment for the call; its exit status, standard output and standard error as `run_cli` gives
    them. An exception kvbench lets escape is raised here (a process would print a traceback, exit 1)."""
    from kvbench.cli import main

    stdout, stderr = _stream(), _stream()
    code: Any = 0
    with _process_state_kept():
        os.environ.update(env or {})
        os.chdir(REPO)
        sys.argv = ["kvbench", *args]
        with _engines_closed(), _consoles_as_in_a_pipe(), contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(stderr):
            try:
                main()
            except SystemExit as exc:
                code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("text"): Python prints it and exits 1
        stderr.write(f"{code}\n")
        code = 1
    return subprocess.CompletedProcess(["kvbench", *args], code, _read(stdout), _read(stderr))
