"""The GPU code has never been able to run here, but every name it looks up in cupy and in NVML's
bindings can be checked here: a misspelt or missing function would otherwise first fail on a GPU."""

import ast
from pathlib import Path

import pytest

import kvbench

PACKAGE = Path(kvbench.__file__).parent
# how the package names each module: `cp = cupy_module()`, `import pynvml`, `nv = self._nvml`
ROOTS = {"cp": "cupy", "cupy": "cupy", "pynvml": "pynvml", "nv": "pynvml"}


def attribute_chains(tree: ast.AST) -> set[tuple[str, ...]]:
    """Every dotted name `root.a.b…` in the tree whose root is a module alias above."""
    chains = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts = []
        inner = node
        while isinstance(inner, ast.Attribute):
            parts.append(inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name) and inner.id in ROOTS:
            chains.add((inner.id, *reversed(parts)))
    return chains


def used_names() -> dict[tuple[str, ...], list[str]]:
    where: dict[tuple[str, ...], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for chain in attribute_chains(ast.parse(path.read_text(), str(path))):
            where.setdefault(chain, []).append(str(path.relative_to(PACKAGE)))
    return where


def test_the_walker_finds_dotted_names():
    tree = ast.parse("x = cp.cuda.runtime.memcpyAsync(a, b)\ny = pynvml.nvmlInit\nz = other.thing")
    assert attribute_chains(tree) >= {("cp", "cuda", "runtime", "memcpyAsync"), ("pynvml", "nvmlInit")}
    assert not any(chain[0] == "other" for chain in attribute_chains(tree))


@pytest.mark.parametrize("module_name", ["cupy", "pynvml"])
def test_every_name_the_package_uses_exists(module_name):
    module = pytest.importorskip(module_name)
    used = {chain: files for chain, files in used_names().items() if ROOTS[chain[0]] == module_name}
    assert len(used) >= 10, "the GPU modules use more of it than this: is the walker blind?"
    missing = []
    for chain, files in sorted(used.items()):
        obj = module
        for i, name in enumerate(chain[1:], start=1):
            if not hasattr(obj, name):
                # the longest prefix that resolved is a module or class: a missing name is a bug;
                # past a call or an instance the walker cannot follow, and stops
                missing.append(f"{'.'.join(chain[:i + 1])} (in {', '.join(files)})")
                break
            obj = getattr(obj, name)
            if not isinstance(obj, type) and not hasattr(obj, "__path__") and type(obj).__name__ != "module":
                break
    assert not missing, f"{module_name} has no: " + "; ".join(missing)
