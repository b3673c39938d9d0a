"""`make run` byte-compiles what the commands import (issue 57 item 18): with PYTHONDONTWRITEBYTECODE set
(many container images), a `--no-compile` install left every command compiling all it imported, every
time (+0.7 s on `fleet`). scripts/compile-imports runs after the install; here, into a bytecode prefix of
the test's own (PYTHONPYCACHEPREFIX), after which `fleet --outliers` finds a compiled file for every module
it loads of kvbench and of the environment's packages."""

import os
import subprocess
import sys

from tests.conftest import REPO

_LOADED = """
import atexit, importlib.util, sys
def _missing():
    out = []
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if isinstance(f, str) and f.endswith(".py") and ("site-packages" in f or "/kvbench/" in f):
            import os
            if not os.path.exists(importlib.util.cache_from_source(f)):
                out.append(m.__name__)
    print("MISSING " + " ".join(sorted(out)), file=sys.stderr)
atexit.register(_missing)
sys.argv = ["kvbench", *sys.argv[1:]]
from kvbench.cli import main
main()
"""


def test_the_run_install_compiles_what_the_commands_import():
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("$(VENV)/.installed-run:", 1)[1].split("\n\n", 1)[0]
    assert "--no-compile" in recipe and "scripts/compile-imports" in recipe


def test_after_it_fleet_compiles_nothing_where_bytecode_is_never_written(tmp_path):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path / "pyc")}
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    stored = subprocess.run([sys.executable, "-m", "kvbench", "import", "tests/fixtures/runs/quick-cpu-vm.json",
                             "--db", db], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert stored.returncode == 0, stored.stderr
    compiled = subprocess.run([sys.executable, "scripts/compile-imports"], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=600)
    assert compiled.returncode == 0 and "byte-compiled" in compiled.stdout, compiled.stderr
    fleet = subprocess.run([sys.executable, "-c", _LOADED, "fleet", "--outliers", "--db", db], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    missing = [line for line in fleet.stderr.splitlines() if line.startswith("MISSING")]
    assert missing == ["MISSING "], fleet.stderr[-3000:]
