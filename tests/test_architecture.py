"""The package's layering, as docs/architecture.md states it: data flows one way, and no module
reaches back into the layer that calls it. Read from the source (every import, also the ones
inside functions), so a back-arrow fails here before it tangles the house."""

import ast

import pytest

from tests.architecture_graph import (
    DOC,
    ORDER,
    PACKAGE,
    ROOMS,
    SHARED,
    cycles,
    doc_with_picture,
    imports_of,
    module_graph,
    modules,
    package_graph,
    private_imports,
    room_graph,
    room_of,
)

# the modules at the top of kvbench/: leaves every layer may import, and the entry point
TOP = {"__init__", "__main__", "errors", "units", "redact", "metadata", "overall", "input_files"}
LEAVES = {"errors", "units", "redact", "metadata", "overall", "input_files", "kv.strategies", "__version__"}
# package → the kvbench packages (or modules) it may import besides itself and the leaves: finer than
# ORDER (a package may import only what is below it) where a layer uses a few modules of another
MAY_IMPORT = {
    "store": set(),
    "kv": set(),
    "hardware": set(),
    "backends": {"hardware"},
    "memory": {"backends"},
    "measure": {"backends"},  # the CUDA event timers
    "executors": {"memory", "kv", "backends"},
    "peers": {"backends", "memory"},
    "benches": {"memory", "kv", "executors", "measure", "hardware", "backends", "peers"},
    "plan": {"benches", "measure", "memory", "backends", "executors.registry"},
    "run": {"plan", "benches", "measure", "memory", "hardware", "backends", "store"},
    "analyze": {"store", "hardware", "kv", "benches.describe", "benches.registry", "benches.params",
                "measure.stats"},  # the median's confidence interval an uncertain verdict is judged by
    "crosscheck": {"benches", "measure", "memory", "plan", "run", "peers"},
    "report": {"analyze", "hardware", "kv", "benches.describe", "benches.registry", "benches.params", "store",
               "crosscheck.common"},
    "cli": {"run", "plan", "analyze", "report", "crosscheck", "benches", "hardware", "kv", "memory", "store"},
    "cluster": {"cli.common", "cli.run", "run", "plan", "benches", "peers", "backends", "memory", "measure",
                "hardware", "store"},
}


def allowed(own: str, target: str) -> bool:
    if target.split(".")[0] == own or target in LEAVES or target.split(".")[0] in TOP:
        return True
    return any(target == a or target.startswith(a + ".") for a in MAY_IMPORT[own])


def test_every_package_has_its_place():
    assert set(MAY_IMPORT) == set(ORDER)
    assert {m for m in modules() if "." not in m and m} == set(ORDER) | (TOP - {"__init__"})


@pytest.mark.parametrize("package", ORDER)
def test_no_package_reaches_back_into_a_layer_above_it(package):
    wrong = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for target in sorted(imports_of(path)):
            if not allowed(package, target):
                wrong.append(f"{path.relative_to(PACKAGE)} imports kvbench.{target}")
    assert not wrong, "\n".join(wrong)


def test_packages_import_only_downward_in_the_documented_order():
    up = [f"{p} imports {t}" for p, targets in package_graph().items() for t in targets
          if ORDER.index(t) < ORDER.index(p)]
    assert not up, "\n".join(up)


# analyze/'s rooms (kvbench/analyze/__init__.py): what each may import of the others besides the shared
# leaves at the top of analyze/; ROOMS is their order, top to bottom
ROOM_MAY_IMPORT = {"accept": {"regress"}, "links": {"regress"}, "decide": set(), "regress": set()}


def test_every_room_of_analyze_is_named_and_says_what_it_answers():
    rooms = {p.name for p in (PACKAGE / "analyze").iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(ROOMS) == set(ROOM_MAY_IMPORT)
    for room in ROOMS:
        assert len((PACKAGE / "analyze" / room / "__init__.py").read_text().strip()) > 100, room


def test_rooms_of_analyze_import_only_downward_and_the_shared_leaves_no_room():
    wrong = [f"{room} imports {other}" for room, others in room_graph().items() for other in others
             if other != SHARED and (room == SHARED or other not in ROOM_MAY_IMPORT[room]
                                     or ROOMS.index(other) < ROOMS.index(room))]
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_a_private_name_of_another_room():
    """Covered for every module by the test below; said here for the rooms, with the module named."""
    wrong = []
    for path in sorted((PACKAGE / "analyze").rglob("*.py")):
        for name in private_imports(path):
            target = name.removeprefix("kvbench.").rsplit(".", 1)[0]
            if room_of(target) != room_of(str(path.relative_to(PACKAGE).with_suffix("")).replace("/", ".")):
                wrong.append(f"{path.relative_to(PACKAGE)}: {name}")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    assert cycles(module_graph()) == []


def test_no_module_imports_another_modules_private_names():
    wrong = [f"{path.relative_to(PACKAGE)}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
             for name in private_imports(path)]
    assert not wrong, "\n".join(wrong)


def test_at_most_eight_modules_at_the_top_each_a_leaf():
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top
    for name in set(top) - {"__init__", "__main__"}:  # a leaf imports no other kvbench package
        assert {t.split(".")[0] for t in imports_of(PACKAGE / f"{name}.py")} <= TOP, name


def test_the_picture_in_docs_architecture_is_the_code():
    text = DOC.read_text()
    assert doc_with_picture(text) == text, "run: python -m tests.architecture_graph --write"


def test_only_entry_points_import_the_cli():
    users = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if "cli" not in p.relative_to(PACKAGE).parts and any(t == "cli" or t.startswith("cli.")
                                                                   for t in imports_of(p))]
    assert sorted(users) == ["__main__.py", "cluster/launch.py"]


def test_the_peer_entry_point_is_not_imported_as_a_library():
    assert not [p for p in PACKAGE.rglob("*.py") if "cluster.peer" in imports_of(p)]


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
