"""`kvbench replay --execute` into HBM: where the window's restores end (auto: HBM on a CUDA host when
restores are priced into the GPU), and on a host without CUDA the kv.replay case skipped with its
reason, the projection still printed and stored (exit 0); a file pool into HBM refused in one line."""

import json

import pytest

import kvbench.benches.kv.replay_gpu as replay_gpu
from kvbench.backends.cuda import cuda_unavailable_reason
from kvbench.cli.replay_execute import destination
from kvbench.errors import BadInput
from tests.cli.test_replay import small_trace  # noqa: F401  (the fixture)
from tests.conftest import run_cli


@pytest.mark.parametrize(("asked", "into", "source", "cuda_here", "where"), [
    ("auto", "gpu", "dram", True, "hbm"), ("auto", "gpu", "dram", False, "dram"), ("auto", "dram", "dram", True, "dram"),
    ("auto", "gpu", "file", True, "dram"), ("hbm", "gpu", "dram", False, "hbm"), ("dram", "gpu", "dram", True, "dram"),
])
def test_where_the_window_s_restores_end(monkeypatch, asked, into, source, cuda_here, where):
    monkeypatch.setattr(replay_gpu, "cuda_unavailable_reason", lambda: None if cuda_here else "no CUDA (test)")
    assert destination(asked, into, source) == where


def test_a_file_pool_into_hbm_and_an_unknown_destination_are_refused():
    with pytest.raises(BadInput, match="--execute-into dram"):
        destination("hbm", "gpu", "file")
    with pytest.raises(BadInput, match="bad --execute-into gpu"):
        destination("gpu", "gpu", "dram")


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="this host has CUDA: the window would run")
def test_into_hbm_without_cuda_is_skipped_with_its_reason_and_the_projection_stands(tmp_path, small_trace):  # noqa: F811
    url = f"sqlite:///{tmp_path}/kv.sqlite"
    done = run_cli("replay", "--trace", small_trace, "--model", "Llama-3.1-8B", "--gpu", "H100", "--db", url,
                   "--tier", "dram=1TB", "--execute", "4", "--start", "100", "--execute-into", "hbm", "--json", "-")
    assert done.returncode == 0, done.stderr
    executed = json.loads(done.stdout)["executed"]
    assert executed["status"] == "skipped" and executed["reason"] == cuda_unavailable_reason()
    shown = run_cli("replay", "--show", "1", "--db", url, "--json", "-")
    assert json.loads(shown.stdout)["executed_run_id"] == executed["run_id"]
