"""kv.restore src=remote strategy=nixl over Mooncake's Transfer Engine (transport=mooncake) and
side by side with NIXL (transport=both): the same fragments, pool and checks, in child processes
that find the test-only CUDA driver (tests/mooncake_driver.py)."""

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from tests.mooncake_driver import run_case_in_child

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")
RESTORE = {"model": "Qwen2.5-32B", "tokens": 64, "strategy": "nixl", "src": "remote", "timeout_s": 120}


@pytest.mark.parametrize("peer", ["inproc", "local"])
def test_a_restore_over_mooncake_is_verified(mooncake_env, peer):
    result = run_case_in_child(mooncake_env, "kv.restore", {**RESTORE, "peer": peer, "transport": "mooncake"})
    assert result["status"] == "ok", result["reason"]
    meta = result["metadata"]
    assert result["verified"] and meta["transport"] == "mooncake" and meta["nixl_backend"] is None
    assert meta["mooncake"]["protocol"] == "tcp" and meta["requests"] == meta["mooncake"]["batches"] >= 1


def test_a_restore_mooncake_never_made_fails_the_check(mooncake_env):
    result = run_case_in_child(mooncake_env, "kv.restore", {**RESTORE, "peer": "inproc", "transport": "mooncake"},
                               no_op=True)
    assert result["status"] == "failed" and "restored wrong" in result["reason"], result["reason"]


def test_both_stores_the_paired_ratio_of_a_restore(mooncake_env):
    result = run_case_in_child(mooncake_env, "kv.restore", {**RESTORE, "peer": "local", "transport": "both"})
    assert result["status"] == "ok", result["reason"]
    assert result["paired"]["against"] == {"transport": "nixl"} and result["metadata"]["nixl_backend"] == "UCX"


@pytest.mark.parametrize("given", [{"strategy": "host", "src": "pageable"}, {"via": "pageable", "strategy": "host"}])
def test_mooncake_only_restores_from_a_remote_pool_with_nixl_s_strategy(given):
    spec = get_bench("kv.restore")
    with pytest.raises(BadInput, match="Mooncake restores from src=remote with strategy=nixl and via=none"):
        spec.validate(spec.canonical_params({**RESTORE, **given, "transport": "mooncake"}))
