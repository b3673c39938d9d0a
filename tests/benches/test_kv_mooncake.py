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


# Issue 58.6: a restore of more than one Mooncake batch. Over TCP a batch holds at most the transfers the
# engine queues per peer (MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER, 1,024 by default): a batch of more failed
# the whole restore with status -1 (4,096 fragments and more, in one batch of up to 8,192).
def test_a_restore_of_many_batches_is_verified_each_batch_at_most_the_tcp_queue(mooncake_env):
    env = {**mooncake_env, "MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER": "64"}  # tokens=64: 512 fragments, 8 batches
    result = run_case_in_child(env, "kv.restore", {**RESTORE, "peer": "inproc", "transport": "mooncake"})
    assert result["status"] == "ok" and result["verified"], result["reason"]
    meta = result["metadata"]
    assert meta["mooncake"]["batch_rows"] == 64 and meta["fragments"] == 512
    assert meta["mooncake"]["batches"] == meta["requests"] == 8


def test_a_later_batch_that_moves_nothing_fails_the_check(mooncake_env):
    env = {**mooncake_env, "MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER": "64"}
    result = run_case_in_child(env, "kv.restore", {**RESTORE, "peer": "inproc", "transport": "mooncake"},
                               no_op="after_first")
    assert result["status"] == "failed" and "restored wrong" in result["reason"], result["reason"]


def test_a_restore_of_4096_fragments_over_tcp_with_the_engine_s_default_queue_is_verified(mooncake_env):
    """The restore the issue saw fail (Qwen2.5-32B, 512 tokens: 4,096 fragments), now 4 batches of 1,024."""
    env = {k: v for k, v in mooncake_env.items() if k != "MC_TCP_MAX_QUEUED_TRANSFERS_PER_PEER"}
    result = run_case_in_child(env, "kv.restore", {**RESTORE, "tokens": 512, "peer": "inproc", "transport": "mooncake"},
                               samples=5)
    assert result["status"] == "ok" and result["verified"], result["reason"]
    assert result["metadata"]["fragments"] == 4096 and result["metadata"]["mooncake"]["batches"] == 4
