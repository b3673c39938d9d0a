import numpy as np
import pytest

from kvbench.errors import BadInput
from kvbench.memory.kinds import allocate, parse_kind
from kvbench.memory.kinds import kind_unavailable_reason
from kvbench.memory.numa import online_nodes
from kvbench.memory.pattern import fill_pattern


def test_pageable_buffer_is_touched_zeroed_and_placed():
    with allocate("pageable", 1 << 20) as region:
        assert region.size_bytes == 1 << 20
        assert region.host_array.sum() == 0
        assert region.address % 4096 == 0  # page-aligned, so it could be bound to a node
        assert region.numa_node in online_nodes()


def test_numa_buffer_is_verified_on_its_node():
    node = online_nodes()[0]
    with allocate(f"numa:{node}", 1 << 20) as region:
        assert region.kind == f"numa:{node}"
        assert region.numa_node == node
        assert region.describe()["numa_node"] == node


class RefusingLibc:
    """gVisor's answer to move_pages (and any NUMA syscall): EPERM."""

    def syscall(self, *args):
        import ctypes
        import errno

        ctypes.set_errno(errno.EPERM)
        return -1


def test_a_refused_numa_query_is_node_unknown_recorded_never_a_failed_buffer(monkeypatch):
    from kvbench.memory import numa

    monkeypatch.setattr(numa, "_libc", RefusingLibc())
    with allocate("pageable", 1 << 20) as region:
        assert region.numa_node is None
        assert "move_pages" in region.describe()["numa_unknown"]
        assert "not permitted" in region.describe()["numa_unknown"]


def test_a_numa_node_that_does_not_exist_is_a_clear_error():
    missing = max(online_nodes()) + 1
    with pytest.raises(BadInput, match=f"numa:{missing}.*NUMA nodes"):
        allocate(f"numa:{missing}", 4096)
    assert "does not exist" in kind_unavailable_reason(parse_kind(f"numa:{missing}"))


def test_a_buffer_larger_than_free_memory_is_refused_before_allocating():
    with pytest.raises(BadInput, match="larger than 90% of the"):
        allocate("pageable", 1 << 50)


@pytest.mark.parametrize("text,message", [("numa", "name the node"), ("hbm", "unknown memory kind"),
                                          ("pageable:1", "takes no argument"), ("numa:x", "node/GPU number")])
def test_kind_parsing_names_the_bad_text(text, message):
    with pytest.raises(BadInput, match=message):
        parse_kind(text)


def test_cuda_kinds_are_unavailable_with_the_reason_without_a_gpu():
    reason = kind_unavailable_reason(parse_kind("pinned"))
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        pytest.skip("a CUDA device is present")
    except Exception:
        pass
    assert reason and reason.startswith("no CUDA device")
    with pytest.raises(BadInput, match="no CUDA device"):
        allocate("device", 4096)


def test_fill_pattern_makes_every_word_distinct():
    a = np.zeros(1 << 16, dtype=np.uint8)
    fill_pattern(a)
    words = a.view(np.uint64)
    assert len(np.unique(words)) == len(words)
