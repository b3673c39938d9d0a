"""Shared fixtures: databases (SQLite always, PostgreSQL when .ci/run started one) and small suites."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# Under pytest-xdist (`make test` runs the suite in several worker processes) each worker is given a
# temporary folder and a PostgreSQL database of its own: a test that looks for the files kvbench leaves in
# the temporary folder, or that empties the database, must see only its own worker's.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if WORKER:
    os.environ["TMPDIR"] = tempfile.mkdtemp(prefix=f"kvbench-tests-{WORKER}-")
    os.chmod(os.environ["TMPDIR"], 0o755)  # as /tmp is, for the tests that run kvbench as 'nobody'
    tempfile.tempdir = None  # read TMPDIR again
    # xdist's workers set COLUMNS=80 and LINES=24, which a plain `pytest` leaves unset: the kvbench
    # processes the tests start must print as they do there (rich's width)
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


@functools.cache
def _worker_database(url: str, worker: str) -> str:
    """`url` with its database renamed for this xdist worker, created on the server if it is missing."""
    base = sa.engine.make_url(url)
    own = base.set(database=f"{base.database}_{worker}")
    engine = sa.create_engine(base, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            if conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": own.database}).first() is None:
                conn.execute(sa.text(f'CREATE DATABASE "{own.database}"'))
    finally:
        engine.dispose()
    return own.render_as_string(hide_password=False)


def worker_role(name: str) -> str:
    """`name` made this xdist worker's own. A PostgreSQL role belongs to the whole server, not to the
    worker's database, so two workers creating and dropping one name race (one worker's DROP ROLE met
    the grant the other had just made in its database)."""
    return f"{name}_{WORKER}" if WORKER else name


def postgres_url() -> str | None:
    url = os.environ.get("KVBENCH_TEST_PG_URL")
    if url and WORKER:
        try:
            return _worker_database(url, WORKER)
        except sa.exc.OperationalError:
            return url  # unreachable: pg_url skips with the reason, as without workers
    return url


def _reset_postgres(url: str) -> None:
    from kvbench.store import schema

    engine = sa.create_engine(url, connect_args={"connect_timeout": 5})
    try:
        schema.metadata.drop_all(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE IF EXISTS kvbench_meta"))
    finally:
        engine.dispose()


@pytest.fixture
def pg_url() -> str:
    url = postgres_url()
    if not url:
        pytest.skip("no PostgreSQL: KVBENCH_TEST_PG_URL is not set (.ci/run starts one)")
    try:
        _reset_postgres(url)
    except sa.exc.OperationalError as exc:
        pytest.skip(f"PostgreSQL at KVBENCH_TEST_PG_URL is not reachable: {exc.orig}")
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    """Each store test runs against SQLite and against a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kvbench.sqlite'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def tiny_suite() -> Path:
    return FIXTURES / "tiny.toml"


# A job a non-interactive shell starts in the background (`make test &`, `(.ci/run &)`) ignores SIGINT, and
# every process it starts inherits that: kvbench, like Python, keeps a signal that was ignored at its start
# ignored, so the tests that end a kvbench run with SIGINT saw their run go on to the end (a fresh-clone
# run of the suite in the background failed test_a_signal_mid_run_...[SIGINT] twice). The tests start
# their processes as a terminal's foreground job does: SIGINT handled here, so it is the default in a child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _children(pid: str = "self") -> set[int]:
    """The child processes of process `pid` (of every one of its threads), by pid."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found.update(int(child) for child in task.read_text().split())
    return found


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it, read before any is killed (a killed parent's children move away)."""
    below = [pid]
    for child in _children(str(pid)):
        below += _tree(child)
    return below


@pytest.fixture(autouse=True)
def no_process_outlives_its_test():
    """A process a test started and left running (an assertion failed before its kill, a
    `communicate(timeout=...)` raised) is killed, with every process it started, when the test ends:
    otherwise it holds its ports, CPUs and the rest of the suite (a test's child outlives a failure
    in most tests that start one). Processes of fixtures wider than a test started before this one."""
    before = _children()
    yield
    left = [pid for child in _children() - before for pid in _tree(child)]
    running = []
    for pid in left:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":  # not just unreaped
                running.append(Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()[:120])
            os.kill(pid, signal.SIGKILL)
    if running:
        warnings.warn(f"killed {len(running)} process(es) the test left running: {'; '.join(running)}", stacklevel=1)


def launch_port() -> int:
    """A --port for a launch of up to 8 ranks on this host, whose rank r listens on --port + r: the first
    of 8 consecutive free ports (kvbench.peers.protocol.free_ports)."""
    from kvbench.peers.protocol import free_ports

    return free_ports(8)


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m kvbench ARGS` as a user would, capturing output."""
    return subprocess.run([sys.executable, "-m", "kvbench", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=REPO)


@pytest.fixture(autouse=True)
def fixed_host_headroom(monkeypatch):
    """Benchmarks' memory checks (memory.host.check_fits) see a fixed 64 GiB free, not what the box has
    now: a neighbour holding memory must never turn a test red (the kv.restore load case's 5.4 GB check
    failed on a CI box with 1.27 GB available). Tests of the check set their own headroom; the
    function that reads the box (memory.headroom.host_headroom) is tested on its own."""
    import kvbench.memory.host as host
    from kvbench.memory.headroom import HostMemory

    monkeypatch.setattr(host, "host_headroom", lambda root="/": HostMemory(64 << 30, "fixed by tests/conftest.py"))
    # and no growth: a refusal never touches this box's memory to see whether it grows (this VM has a balloon)
    monkeypatch.setattr(host, "growable_memory", lambda root="/": None)


@pytest.fixture(scope="session")
def _run_templates(tmp_path_factory) -> dict:
    """SQLite files holding N runs of a suite, made once per test session (`stored_runs`)."""
    return {"dir": tmp_path_factory.mktemp("stored-runs")}


def _sqlite_copy(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file in WAL mode (its -wal pages included), by SQLite's backup."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


@pytest.fixture
def stored_runs(_run_templates, tmp_path):
    """`stored_runs(suite, n)`: the URL of tmp_path/k.sqlite, a database holding runs 1..n of `suite`
    (a path from the repository's root), as `kvbench run --suite SUITE --db URL` n times would leave it.
    The runs are measured once per test session, each template being the one before plus one run; every
    test gets its own copy, so one that tags or adds runs changes nobody else's."""
    from tests.inproc import run_in_process

    def template(suite: str, n: int) -> Path:
        path = _run_templates["dir"] / f"{Path(suite).stem}-{n}.sqlite"
        if not path.exists():
            building = path.with_name(f"building-{path.name}")  # a failed run leaves no template behind
            for leftover in building.parent.glob(f"{building.name}*"):
                leftover.unlink()
            if n > 1:
                _sqlite_copy(template(suite, n - 1), building)
            done = run_in_process("run", "--suite", suite, "--db", f"sqlite:///{building}")
            assert done.returncode == 0, done.stderr
            _sqlite_copy(building, path)
        return path

    def make(suite: str, n: int) -> str:
        target = tmp_path / "k.sqlite"
        _sqlite_copy(template(suite, n), target)
        return f"sqlite:///{target}"

    return make


@pytest.fixture(scope="session")
def mooncake_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a child process in which Mooncake's Transfer Engine loads (the test-only
    stand-in driver on its loader path; tests/mooncake_driver.py); skipped with the reason where the
    wheel is not installed or the stand-in cannot be built."""
    from tests.mooncake_driver import build_stub, child_env, mooncake_reason_in

    try:
        import mooncake  # noqa: F401
    except ImportError:
        pytest.skip("Mooncake Transfer Engine is not installed (the test extra installs mooncake-transfer-engine)")
    folder = tmp_path_factory.mktemp("libcuda-stub")
    try:
        build_stub(folder)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"the test-only libcuda.so.1 cannot be built here: {exc}")
    env = child_env(folder, MC_LOG_LEVEL="WARNING")
    reason = mooncake_reason_in(env)
    if reason:
        pytest.skip(f"Mooncake does not load even with the test-only driver: {reason}")
    return env


WIDE_SCOPES = ("class", "module", "package")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups (`--dist loadgroup`)
def pytest_collection_modifyitems(config, items):
    """Under xdist, the tests that share a fixture wider than one test (a module's stored runs, a
    gpu-check stage, a set of network namespaces) run on one worker, so it is made once, as in a
    plain `pytest`; every other test goes to whichever worker is free. A test marked
    `xdist_group` itself keeps its own group."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(chain and chain[-1].scope in WIDE_SCOPES for chain in defs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
