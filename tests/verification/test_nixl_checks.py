"""Proof that the checks of the paths through NIXL fail, for each way a request can go wrong.

| check | benchmarks | breakages it is shown to catch |
|---|---|---|
| every I/O of every prepared request compared with the file's pattern (read) or read back from the file (write) | storage.read, storage.write (POSIX) | nothing moved; first bytes skipped; last byte of each I/O skipped; one I/O skipped; two I/Os swapped; a later request (not the first) wrong; any one request wrong, caught by the check before timing alone, whatever timing does; reset skipped; the check compares nothing |
| every fragment compared with the pool's pattern (`kv.check.first_mismatch`) | kv.restore strategy=nixl, src=file and src=remote | nothing moved; first bytes skipped; last byte of each fragment skipped; one fragment skipped; two fragments swapped; reset skipped; the check compares nothing |
| guard bytes unchanged around the destination (`memory.guard`) | kv.restore strategy=nixl, src=file and src=remote | one byte written past a fragment; one byte written before one |
| crc32 of the whole buffer against the pattern's | net.read, net.write | nothing moved; first bytes skipped; last byte of each block skipped; one block skipped; two blocks swapped; reset skipped; the check compares nothing |

crc32's guarantee: it detects every error confined to 32 consecutive bits (any one corrupted
word) and every odd number of flipped bits; a larger corruption passes with probability 2**-32.
Here the poison differs from the pattern in every byte, so a skipped region is such a corruption.
"""

import pytest

from kvbench.backends.nixl import PreparedTransfer, backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from tests.verification.saboteurs import (
    BREAKAGES,
    GUARD_BREAKAGES,
    break_after,
    file_spoiler,
    memory_spoiler,
)

pytestmark = pytest.mark.skipif(backend_unavailable_reason("POSIX") is not None or
                                backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('POSIX') or backend_unavailable_reason('UCX')}")
FAST = Settings(samples=5, min_sample_s=0.001, warmup_s=0)
STORAGE = {"file_size": "2MiB", "io_size": "64KiB", "batch": 8}  # 4 requests of 8 I/Os
CASES = {
    "storage.read": ("storage.read", STORAGE),
    "storage.write": ("storage.write", STORAGE),
    "kv.restore nixl file": ("kv.restore", {"model": "Llama-3.1-8B", "tokens": 64, "strategy": "nixl", "src": "file"}),
    "kv.restore nixl remote": ("kv.restore", {"model": "Llama-3.1-8B", "tokens": 64, "strategy": "nixl",
                                              "src": "remote"}),
    "net.read": ("net.read", {"block_size": "64KiB", "batch": 8}),
    "net.write": ("net.write", {"block_size": "64KiB", "batch": 8}),
}
LATER_REQUEST = "a later request wrong, not the first"


def run(facts, tmp_path, name):
    bench, params = CASES[name]
    if bench.startswith("storage."):
        params = {**params, "path": str(tmp_path)}
    return run_case(Case(bench, get_bench(bench).canonical_params(params)), facts, FAST)


def destination(transfer):
    """The fragments a NIXL request writes and a spoiler for them: local memory for a read, the
    file or the in-process peer's memory for a write."""
    descs = transfer.local_descs if transfer.operation == "READ" else transfer.remote_descs
    fragments = [(int(a), int(n)) for a, n, _ in descs.tolist()]
    if transfer.operation == "WRITE" and transfer.agent.name == transfer.remote_agent:  # a file of this agent
        return fragments, file_spoiler(int(descs[0, 2]))
    return fragments, memory_spoiler(0)


def break_requests(monkeypatch, breakage):
    real_init, real_post, real_wait = PreparedTransfer.__init__, PreparedTransfer.post, PreparedTransfer.wait
    made = []

    def init(self, agent, operation, local, local_mem, remote, remote_mem, remote_agent, *args, **kwargs):
        real_init(self, agent, operation, local, local_mem, remote, remote_mem, remote_agent, *args, **kwargs)
        self.remote_agent = remote_agent
        self.index = len(made)
        made.append(self)

    def broken(self) -> bool:
        return breakage != LATER_REQUEST or self.index == len(made) - 1

    def post(self):
        if breakage == "nothing written":
            return
        real_post(self)

    def wait(self):
        if breakage == "nothing written":
            return
        real_wait(self)
        if broken(self):
            fragments, spoiler = destination(self)
            how = "last byte of each fragment skipped" if breakage == LATER_REQUEST else breakage
            break_after(how, lambda: None, fragments, *spoiler)()

    monkeypatch.setattr(PreparedTransfer, "__init__", init)
    monkeypatch.setattr(PreparedTransfer, "post", post)
    monkeypatch.setattr(PreparedTransfer, "wait", wait)
    return made


@pytest.mark.parametrize("name", CASES)
def test_each_case_passes_unbroken(facts, tmp_path, name):
    result = run(facts, tmp_path, name)
    assert result.status == "ok" and result.measurement.verified, result.reason


@pytest.mark.parametrize("breakage", [*BREAKAGES, LATER_REQUEST])
@pytest.mark.parametrize("name", CASES)
def test_a_broken_request_fails_the_case(facts, tmp_path, monkeypatch, name, breakage):
    made = break_requests(monkeypatch, breakage)
    result = run(facts, tmp_path, name)
    if breakage == LATER_REQUEST and len(made) < 2:
        pytest.skip("one request: no later one")
    assert result.status == "failed", f"{name} passed with '{breakage}'"
    assert result.reason.startswith("integrity check failed"), result.reason


@pytest.mark.parametrize("breakage", [b for b in GUARD_BREAKAGES if b != "one byte written between fragments"])
@pytest.mark.parametrize("name", ["kv.restore nixl file", "kv.restore nixl remote"])
def test_a_request_writing_outside_every_fragment_fails_the_case(facts, tmp_path, monkeypatch, name, breakage):
    """A restore's destination is whole (no gap between fragments): its guards are the margins."""
    break_requests(monkeypatch, breakage)
    result = run(facts, tmp_path, name)
    assert result.status == "failed", f"{name} passed with '{breakage}'"
    assert result.reason.startswith("integrity check failed: a byte outside every fragment was written"), result.reason


@pytest.mark.parametrize("part", ["reset", "check"])
@pytest.mark.parametrize("name", CASES)
def test_a_reset_or_check_that_does_nothing_fails_the_case(facts, tmp_path, monkeypatch, name, part):
    bench = get_bench(CASES[name][0])
    real = type(bench).prepare

    def prepare(self, params):
        prepared = real(self, params)
        setattr(prepared.workload, part, lambda: None)
        return prepared

    monkeypatch.setattr(type(bench), "prepare", prepare)
    result = run(facts, tmp_path, name)
    assert result.status == "failed" and "the reset or the check is broken" in result.reason, result.reason


@pytest.mark.parametrize("bench", ["storage.read", "storage.write"])
def test_the_storage_check_covers_every_prepared_request_every_time(tmp_path, monkeypatch, bench):
    """Issue 44: a broken later storage request was caught in only some runs (whether the timed operations
    happened to stop after it). Here timing plays no part: the check before timing alone (the engine's
    `verify`) fails whichever one request is broken, naming it, and runs every prepared request."""
    from kvbench.errors import IntegrityError
    from kvbench.measure.engine import verify

    real_init, real_wait = PreparedTransfer.__init__, PreparedTransfer.wait
    made, broken, ran = [], {"index": None}, []

    def init(self, agent, operation, local, local_mem, remote, remote_mem, remote_agent, *args, **kwargs):
        real_init(self, agent, operation, local, local_mem, remote, remote_mem, remote_agent, *args, **kwargs)
        self.remote_agent, self.index = remote_agent, len(made)
        made.append(self)

    def wait(self):
        real_wait(self)
        ran.append(self.index)
        if self.index == broken["index"]:
            fragments, spoiler = destination(self)
            break_after("last byte of each fragment skipped", lambda: None, fragments, *spoiler)()

    monkeypatch.setattr(PreparedTransfer, "__init__", init)
    monkeypatch.setattr(PreparedTransfer, "wait", wait)
    spec = get_bench(bench)
    prepared = spec.prepare(spec.canonical_params({**STORAGE, "path": str(tmp_path)}))
    try:
        requests = len(made)
        assert requests >= 4
        verify(prepared.workload)
        assert sorted(set(ran)) == list(range(requests))  # unbroken: every request moved and was compared
        for index in range(requests):
            broken["index"] = index
            with pytest.raises(IntegrityError, match=f"of request {index} "):
                verify(prepared.workload)
    finally:
        prepared.close()
