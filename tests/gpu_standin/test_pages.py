"""Pinned host memory of each page size on the CUDA stand-in: base pages from cudaHostAlloc (as
`pin_memory=True` gives an engine), huge pages mapped, touched and page-locked with cudaHostRegister,
unregistered when the case closes; every buffer's page size is recorded. Bytes and calls, never a speed."""

import pytest

from kvbench.memory.pages import pages_unavailable_reason
from kvbench.metadata import HOST_PAGES
from tests.gpu_standin.test_standin import KV, run


@pytest.mark.parametrize("pages,pinned_by", [("base", "cudaHostAlloc"), ("thp", "cudaHostRegister")])
@pytest.mark.parametrize("bench,params", [("pcie.h2d", {"memory": "pinned", "size": "4MiB"}), ("kv.restore", {**KV, "strategy": "ce-graph"})])
def test_pinned_buffers_take_the_case_s_page_size(standin, bench, params, pages, pinned_by):
    if pages_unavailable_reason(pages):
        pytest.skip(pages_unavailable_reason(pages))
    result = run(bench, **params, pages=pages)
    assert result.status == "ok", result.reason
    pinned = [b for b in result.metadata[HOST_PAGES]["buffers"] if b["kind"] == "pinned"]
    assert pinned and all(b["pages"] == pages and b["pinned_by"] == pinned_by for b in pinned)
    if pages == "thp":
        assert all(b["huge_fraction"] is not None for b in pinned)
