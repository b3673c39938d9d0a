"""kv.restore from a file (NIXL POSIX) and from another agent (NIXL UCX), checked against the pool."""

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.measure import Settings
from kvbench.plan.cases import Case, plan
from kvbench.plan.suite import BenchSweep
from kvbench.run.runner import run_case

pytestmark = pytest.mark.skipif(backend_unavailable_reason("POSIX") or backend_unavailable_reason("UCX"),
                                reason="NIXL POSIX/UCX unavailable")
FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0)


def case(**params):
    spec = get_bench("kv.restore")
    return Case("kv.restore", spec.canonical_params({"model": "Qwen2.5-32B", "tokens": 64, "strategy": "nixl",
                                                     "timeout_s": 120, **params}))  # a peer's start, busy box


@pytest.mark.parametrize("params", [
    {"src": "file"}, {"src": "file", "file_layout": "per_block"}, {"src": "file", "block_tokens": 1},
    {"src": "file", "src_layout": "chunk"}, {"src": "remote"}, {"src": "remote", "peer": "local"},
])
def test_restore_from_nixl_tiers_is_verified(facts, params):
    result = run_case(case(**params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    assert result.metadata["fragments"] == 4 * 128 * (16 // case(**params).params["block_tokens"])
    assert result.metadata["nixl_backend"] == ("POSIX" if params["src"] == "file" else "UCX")
    if params.get("block_tokens") == 1:  # 2 KiB fragments cannot go O_DIRECT
        assert result.metadata["page_cache"] and any("not 4 KiB aligned" in w for w in result.warnings)


def test_more_fragments_than_one_request_holds(facts, monkeypatch):
    """A restore of more descriptors than one NIXL request takes (REQUEST_ROWS, 8192) posts several;
    the limit is lowered here so that 16 requests need 8,192 fragments, not 131,072 (30 s here)."""
    from kvbench.executors import nixl

    monkeypatch.setattr(nixl, "REQUEST_ROWS", 512)
    result = run_case(case(src="file", tokens=64, block_tokens=1), facts, FAST)  # 8,192 fragments
    assert result.status == "ok", result.reason
    assert result.metadata["fragments"] == 8192 and result.metadata["requests"] == 16


def test_per_block_files_need_a_block_contiguous_layout(facts):
    result = run_case(case(src="file", file_layout="per_block", src_layout="layer_first"), facts, FAST)
    assert result.status == "skipped" and "page_first" in result.reason


def test_nixl_strategy_needs_a_nixl_tier():
    with pytest.raises(BadInput, match="nixl restores from src=file or src=remote"):
        plan([BenchSweep(id="kv.restore", params={"strategy": "nixl", "tokens": 64, "src": "pageable"})])


@pytest.mark.parametrize("params", [{}, {"strategy": "host", "via": "pageable", "chunk": "2MiB"}])
def test_a_request_the_peer_never_completes_fails_the_case_after_its_timeout(facts, monkeypatch, params):
    """A pool's peer that never completes a request (a hung or vanished peer: NIXL says PROC for ever)
    fails the case after the case's `timeout_s`, the peer's wait, as net.read and net.write do, not
    after NIXL's own default (60 s, KVBENCH_NIXL_TIMEOUT_S); the direct read and the two-hop one alike."""
    from kvbench.backends.nixl import nixl_api

    agent = nixl_api().nixl_agent
    posted = agent.transfer
    monkeypatch.setattr(agent, "transfer", lambda self, handle, *args, **kwargs: posted(self, handle, *args, **kwargs)
                        and "PROC")
    monkeypatch.setattr(agent, "check_xfer_state", lambda self, handle: "PROC")
    result = run_case(case(src="remote", timeout_s=1, **params), facts, FAST)
    assert result.status == "failed"
    assert "NIXL transfer did not finish within 1 s" in result.reason
