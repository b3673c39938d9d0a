"""A memory kind's name is parsed without the allocators (kvbench/memory/kind_names.py): describing a
stored result's `src=numa:1` must not load numpy. The names are those the allocators know."""

import subprocess
import sys

import pytest

from kvbench.errors import BadInput
from kvbench.memory import kinds
from kvbench.memory.kind_names import TAKES_INDEX, MemoryKind, parse_kind
from tests.conftest import REPO


def test_the_names_are_the_kinds_the_allocators_know():
    assert set(TAKES_INDEX) == set(kinds.memory_kinds())
    assert kinds.parse_kind is parse_kind


@pytest.mark.parametrize(("text", "kind"), [("pageable", MemoryKind("pageable")), ("numa:1", MemoryKind("numa", 1)),
                                            ("device:3", MemoryKind("device", 3)), ("remote", MemoryKind("remote"))])
def test_a_name_parses_to_its_kind_and_back(text, kind):
    assert parse_kind(text) == kind and str(kind) == text


@pytest.mark.parametrize(("text", "said"), [("pagable", "did you mean 'pageable'"), ("numa", "name the node"),
                                            ("pinned:1", "takes no argument"), ("numa:x", "a node/GPU number")])
def test_a_bad_name_is_refused_naming_it(text, said):
    with pytest.raises(BadInput, match=said):
        parse_kind(text)


def test_parsing_a_name_loads_neither_numpy_nor_the_allocators():
    probe = ("import sys\nfrom kvbench.memory.kind_names import parse_kind\nparse_kind('numa:0')\n"
             "print('numpy' in sys.modules, 'kvbench.memory.kinds' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120,
                         check=True).stdout.split()
    assert out == ["False", "False"]
