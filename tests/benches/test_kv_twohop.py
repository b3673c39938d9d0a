"""Two-hop restores (`via=`): whole blocks read through a staging buffer, then scattered into the
serving layout — pipelined or not, verified byte for byte, legs and overlap recorded."""

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.benches.kv import twohop
from kvbench.errors import BadInput
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case

pytestmark = pytest.mark.skipif(backend_unavailable_reason("POSIX") or backend_unavailable_reason("UCX"),
                                reason="NIXL POSIX/UCX unavailable")
FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0)


def case(**params):
    spec = get_bench("kv.restore")
    return Case("kv.restore", spec.canonical_params({"model": "Qwen2.5-32B", "tokens": 256, "src": "file",
                                                     "src_layout": "page_first", "via": "pageable",
                                                     "chunk": "2MiB", **params}))


@pytest.mark.parametrize("params", [
    {}, {"pipeline": "off"}, {"file_layout": "per_block"}, {"src": "remote"}, {"dst_layout": "chunk"},
    {"strategy": "host-numpy"}, {"chunk": "64MiB"},  # one chunk: nothing to overlap, still right
])
def test_a_two_hop_restore_lands_every_fragment_and_records_its_legs(facts, params):
    result = run_case(case(**params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified
    legs = result.metadata["legs"]
    assert legs["read_s"] > 0 and legs["scatter_s"] > 0 and 0 <= result.metadata["overlap"] <= 1
    blocks = 256 // 16  # of 4 MiB each: one per 2 MiB chunk, all 16 in one 64 MiB chunk
    assert result.metadata["chunks"] == (1 if params.get("chunk") == "64MiB" else blocks)


def test_chunks_hold_whole_blocks():
    assert [len(c) for c in twohop.chunk_blocks(5 << 20, 16 << 20, 10)] == [3, 3, 3, 1]
    assert [len(c) for c in twohop.chunk_blocks(5 << 20, 1 << 20, 2)] == [1, 1]  # smaller than a block: one


def test_a_restore_whose_reads_did_not_happen_fails_its_check(facts, monkeypatch):
    class Idle(twohop.PreparedTransfer):  # the requests are prepared, never posted
        def post(self):
            self._state = "DONE"

        def wait(self):
            return None

    monkeypatch.setattr(twohop, "PreparedTransfer", Idle)
    result = run_case(case(), facts, FAST)
    assert result.status == "failed" and "integrity check failed" in result.reason


class OnceThenIdle(twohop.PreparedTransfer):
    """A read that moves its bytes the first time it is posted, then answers DONE without moving any."""

    def post(self):
        if getattr(self, "moved", False):
            self._state = "DONE"
            return
        self.moved = True
        super().post()


# One chunk (or two, one per staging buffer): each buffer keeps what its single real read brought, so
# stale staging passes for fresh reads unless the reset poisons it.
STALE_CAN_PASS = [{"chunk": "64MiB"}, {"chunk": "32MiB"}, {"chunk": "64MiB", "src": "remote"},
                  {"chunk": "32MiB", "pipeline": "off"}]


@pytest.mark.parametrize("params", STALE_CAN_PASS)
def test_reads_that_move_bytes_once_then_none_fail_the_case(facts, monkeypatch, params):
    monkeypatch.setattr(twohop, "PreparedTransfer", OnceThenIdle)
    result = run_case(case(**params), facts, FAST)
    assert result.status == "failed" and "integrity check failed" in result.reason, result.reason


@pytest.mark.parametrize("params", STALE_CAN_PASS)
def test_without_poisoned_staging_reads_that_stopped_moving_bytes_pass(facts, monkeypatch, params):
    """The test above's sensitivity: with the staging buffers' poisoning taken out of the reset, the
    same stalled reads come out ok and verified. So that test is what goes red if it is dropped."""
    real_allocate = twohop.allocate

    def allocate(kind, size):  # what two-hop allocates itself are the staging buffers (dst is guarded apart)
        region = real_allocate(kind, size)
        region.poison = lambda: None
        return region

    monkeypatch.setattr(twohop, "allocate", allocate)
    monkeypatch.setattr(twohop, "PreparedTransfer", OnceThenIdle)
    result = run_case(case(**params), facts, FAST)
    assert result.status == "ok" and result.measurement.verified, result.reason


@pytest.mark.parametrize("breakage", ["one byte written past a fragment", "one byte written before a fragment"])
def test_a_scatter_writing_outside_every_fragment_fails_the_case(facts, monkeypatch, breakage):
    from kvbench.executors.host import HostExecutor
    from tests.verification.saboteurs import array_spoiler, break_after

    real, every = HostExecutor.bind, []  # every chunk's fragments: a byte outside all of them is outside the restore

    def bind(self, src, dst, descriptors, threads=1):
        every.extend(zip(descriptors.dst_offset.tolist(), descriptors.length.tolist(), strict=True))
        return break_after(breakage, real(self, src, dst, descriptors, threads), every, *array_spoiler(dst.host_array))

    monkeypatch.setattr(HostExecutor, "bind", bind)
    result = run_case(case(), facts, FAST)
    assert result.status == "failed" and "a byte outside every fragment was written" in result.reason, result.reason


@pytest.mark.parametrize("params,message", [
    ({"src": "pageable"}, "two-hop restores read from src=file or src=remote"),
    ({"src_layout": "layer_first"}, "keep each block in one piece"),
    ({"strategy": "contiguous"}, "scatters each chunk"),
    ({"strategy": "nixl"}, "scatters each chunk"),
])
def test_what_a_two_hop_restore_needs_is_checked(params, message):
    with pytest.raises(BadInput, match=message):
        get_bench("kv.restore").validate(case(**params).params)


def test_the_new_parameters_keep_older_cases_the_same_cases():
    spec = get_bench("kv.restore")
    plain = Case("kv.restore", spec.canonical_params({"src": "file", "strategy": "nixl"}))
    from kvbench.benches.params import case_hash
    from kvbench.benches.peer_params import PAIR_HOSTS, REMOTE_PEER

    later = ("via", "chunk", "pipeline", "load", *REMOTE_PEER, *PAIR_HOSTS)  # peer=remote's came later still
    assert set(later) <= {name for name, p in spec.params.items() if p.added}
    # and every parameter added since (requests, mode, transport, pages, ...) is `added` too, so at its
    # default it leaves the case as a kvbench before any of them hashed it
    older = {k: v for k, v in plain.params.items() if not spec.params[k].added}

    assert plain.case_hash == case_hash("kv.restore", older)  # as a kvbench before via= hashed it
    assert case(pipeline="off").case_hash != case().case_hash


def test_page_locked_staging_without_cuda_is_skipped_with_the_reason(facts):
    from kvbench.backends.cuda import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason is None:
        pytest.skip("CUDA is available here: pinned staging can run")
    result = run_case(case(src="file", via="pinned"), facts, FAST)
    assert result.status == "skipped" and result.reason == f"via=pinned: {reason}"
