"""An optional backend that is installed but broken (issue 57 item 8): a Mooncake wheel whose engine
lacks libibverbs (OSError), one that raises RuntimeError or SyntaxError, one that blocks on import. Each
is a fake module on PYTHONPATH in a child process; the case is skipped with one line naming what went
wrong, and a blocking import is bounded in time. The same loader serves NIXL, cupy, torch and NVML."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO, run_cli

BODIES = {
    "OSError": "raise OSError('libibverbs.so.1: cannot open shared object file: No such file or directory')",
    "RuntimeError": "raise RuntimeError('engine built for another ABI')",
    "SyntaxError": "def broken(:\n    pass",
    "SystemExit": "import sys; sys.exit(3)",
    "blocks": "import threading; threading.Event().wait()",
}


def _fake(tmp_path, package: str, body: str, where: str = "__init__.py") -> dict:
    folder = tmp_path / "site" / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("" if where != "__init__.py" else body + "\n")
    if where != "__init__.py":
        (folder / where).write_text(body + "\n")
    return {"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}", "KVBENCH_IMPORT_TIMEOUT_S": "2"}


@pytest.mark.parametrize("where", ["__init__.py", "engine.py"])
@pytest.mark.parametrize("failure", sorted(BODIES))
def test_a_broken_mooncake_wheel_skips_the_case_with_one_line(tmp_path, failure, where):
    env = _fake(tmp_path, "mooncake", BODIES[failure], where)
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    ran = run_cli("run", "--bench", "net.write", "--set", "transport=mooncake", "--set", "peer=inproc",
                  "--set", "block_size=64KiB", "--set", "batch=4", "--db", db, "--json", str(tmp_path / "r.json"),
                  env=env, timeout=120)
    assert "Traceback" not in ran.stderr + ran.stdout, ran.stderr[-2000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    [result] = doc["results"]
    assert result["status"] == "skipped", result
    reason = result["reason"]
    assert "\n" not in reason and "mooncake" in reason.lower(), reason
    expected = {"OSError": "libibverbs", "RuntimeError": "RuntimeError", "SyntaxError": "SyntaxError",
                "SystemExit": "SystemExit", "blocks": "did not finish loading in 2 s"}[failure]
    assert expected in reason, reason


LOADERS = {
    "cupy": "from kvbench.backends.cuda import cuda_unavailable_reason as f; import kvbench.backends.cuda as c; "
            "c.driver_missing_reason = lambda: None; print(f())",
    "torch": "import kvbench.benches.pcie.torch_backend as t; t.driver_missing_reason = lambda: None; "
             "print(t.torch_unavailable_reason())",
    "pynvml": "from kvbench.hardware.nvml import read_gpus; print(read_gpus()[1])",
    "nixl": "from kvbench.backends.nixl import nixl_unavailable_reason; print(nixl_unavailable_reason())",
}


@pytest.mark.parametrize("failure", ["OSError", "blocks"])
@pytest.mark.parametrize("package", sorted(LOADERS))
def test_every_optional_backend_loads_the_same_way(tmp_path, package, failure):
    env = _fake(tmp_path, package, BODIES[failure])
    code = textwrap.dedent(LOADERS[package])
    if package == "nixl":  # the installed nixl_cu13 must not answer first
        code = "import sys; sys.modules['nixl_cu13'] = None; sys.modules['nixl_cu12'] = None; " + code
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **env}, cwd=REPO)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr[-2000:]
    line = ran.stdout.strip()
    assert "\n" not in line and package in line, line
    assert ("libibverbs" if failure == "OSError" else "did not finish loading in 2 s") in line, line


def test_a_module_that_installs_a_signal_handler_as_it_loads_still_loads(tmp_path, monkeypatch):
    """The bounded load imports in a helper thread; a wheel that calls signal.signal on import (allowed in the
    main thread only) is loaded in the main thread instead, not reported broken."""
    from kvbench.hardware import optional

    folder = tmp_path / "signalling"
    folder.mkdir()
    (folder / "__init__.py").write_text("import signal\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\nOK = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert optional.load("signalling").OK == 1
