"""The package's layering, as docs/architecture.md states it: data flows one way, and no module
reaches back into the layer that calls it. Read from the source (every import, also the ones
inside functions), so a back-arrow fails here before it tangles the house."""

import ast
from pathlib import Path

import pytest

import kvbench

PACKAGE = Path(kvbench.__file__).parent

# package (or module) → the kvbench packages it may import besides itself and the leaf modules
LEAVES = {"errors", "units", "resources", "metadata", "records", "interrupts", "input_files", "kv.strategies",
          "overall", "redact", "__version__"}
MAY_IMPORT = {
    "kv": set(),
    "hardware": set(),
    "store": set(),
    "backends": {"hardware", "memory.pattern"},
    "memory": {"backends"},
    "measure": {"backends"},  # the CUDA event timers
    "executors": {"memory", "kv", "backends"},
    "peers": {"backends", "memory"},
    "benches": {"memory", "kv", "executors", "measure", "hardware", "backends", "peers"},
    "plan": {"benches", "measure", "memory", "backends"},
    "analyze": {"store", "hardware", "kv", "benches.describe", "benches.registry", "benches.params",
                "measure.stats"},  # the median's confidence interval an uncertain verdict is judged by
    "report": {"analyze", "hardware", "kv", "benches.describe", "benches.registry", "benches.params", "store",
               "crosscheck.common"},
    "crosscheck": {"benches", "measure", "memory", "plan", "runner", "this_host", "peers", "result"},
}


def imports_of(path: Path) -> set[str]:
    """Every kvbench module `path` imports, without the `kvbench.` prefix."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kvbench"):
            found.add(node.module.removeprefix("kvbench").lstrip("."))
            if node.module == "kvbench":
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("kvbench.") for a in node.names if a.name.startswith("kvbench."))
    return {f for f in found if f}


def allowed(own: str, target: str) -> bool:
    if target == own or target.startswith(own + ".") or target.split(".")[0] == own:
        return True
    if target in LEAVES or target.split(".")[0] in {t.split(".")[0] for t in LEAVES if "." not in t}:
        return True
    return any(target == a or target.startswith(a + ".") for a in MAY_IMPORT[own])


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_no_package_reaches_back_into_a_layer_above_it(package):
    wrong = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for target in sorted(imports_of(path)):
            if not allowed(package, target):
                wrong.append(f"{path.relative_to(PACKAGE)} imports kvbench.{target}")
    assert not wrong, "\n".join(wrong)


def test_only_entry_points_import_the_cli():
    users = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if "cli" not in p.relative_to(PACKAGE).parts and any(t == "cli" or t.startswith("cli.")
                                                                   for t in imports_of(p))]
    assert sorted(users) == ["entry.py", "launch.py"]


def test_the_peer_entry_point_is_not_imported_as_a_library():
    assert not [p for p in PACKAGE.rglob("*.py") if "peer" in imports_of(p)]


def test_no_module_is_over_350_lines_and_no_cli_module_over_250():
    sizes = {p: len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert not [f"{p.relative_to(PACKAGE)}: {n}" for p, n in sizes.items() if n > 350]
    assert not [f"{p.relative_to(PACKAGE)}: {n}" for p, n in sizes.items() if "cli" in p.parts and n > 250]


def test_kvbench_never_reaches_the_gpu_stand_in():
    """The CUDA stand-in (tests/gpu_standin) is a test fixture: no kvbench module imports it, names
    its modules or its variables, so nothing kvbench runs can write a stand-in number outside a test."""
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        if any(name.split(".")[0] in ("gpu_standin", "tests") for name in names):
            wrong.append(f"{path.relative_to(PACKAGE)} imports the stand-in or the tests")
        if "gpu_standin" in path.read_text() or "GPU_STANDIN" in path.read_text():
            wrong.append(f"{path.relative_to(PACKAGE)} names the stand-in")
    assert not wrong, "\n".join(wrong)


def test_kvbench_never_loads_a_stand_in_driver():
    """The test-only libcuda.so.1 (tests/fixtures/libcuda_stub) is never part of kvbench: the package
    ships no shared library and names neither the stand-in nor the tests' folder, and a kvbench
    process that asks for Mooncake maps no libcuda but the host's own (none on a CPU host), while
    this test process, which runs the Mooncake tests in children, maps none from a test folder."""
    import subprocess
    import sys

    assert not [p for p in PACKAGE.rglob("*.so*")]
    named = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if any(word in p.read_text() for word in ("libcuda_stub", "libcuda-stub", "tests/fixtures"))]
    assert not named
    probe = ("from kvbench.backends.mooncake import mooncake_unavailable_reason as r; r(); "
             "print('\\n'.join(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcuda.so' in l})))")
    env = {k: v for k, v in __import__("os").environ.items() if k != "LD_LIBRARY_PATH"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    for path in done.stdout.split():
        assert "stub" not in path and "/tests/" not in path and not path.startswith("/tmp"), path
    with open("/proc/self/maps") as maps:
        own = {line.split()[-1] for line in maps if "libcuda.so" in line}
    assert not [p for p in own if "stub" in p or "/tests/" in p], own
