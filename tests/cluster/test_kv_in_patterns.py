"""kv.restore in a cluster run (python -m kvbench.cluster.launch), without a network: what the launcher's
arguments plan, which cases it refuses in one line, and which way the bytes go."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvbench.cluster import launch
from kvbench.cluster.rank import peer_cases, share
from kvbench.cluster.schedule import Pattern, schedule
from kvbench.errors import BadInput
from tests.conftest import REPO

LAUNCHER = {"peer": "remote", "block_size": "64KiB", "batch": 8, "timeout_s": 60}  # what launch.py lays over
ROSTER = [{"rank": r, "addr": f"10.0.0.{r + 1}", "port": 5555, "host": f"h{r}", "local_rank": 0} for r in range(2)]


def planned(*run_args: str) -> list:
    request = launch._request(launch._run_parser().parse_args(list(run_args)), LAUNCHER)
    return peer_cases(request)[0]


def test_kv_restore_alone_is_not_refused_for_the_launcher_s_own_block_size_and_batch():
    """Was: "--set block_size: no selected benchmark takes a parameter 'block_size'"."""
    (case,) = planned("--bench", "kv.restore", "--set", "src=remote", "--set", "strategy=nixl")
    assert case.params["peer"] == "remote" and case.params["src"] == "remote" and case.params["timeout_s"] == 60


def test_net_write_and_kv_restore_run_side_by_side():
    cases = planned("--bench", "net.write", "--bench", "kv.restore", "--set", "src=remote", "--set", "strategy=nixl")
    assert [c.bench for c in cases] == ["net.write", "kv.restore"]
    assert cases[0].params["block_size"] == 65536 and cases[0].params["batch"] == 8  # the target's buffer
    (two_hop,) = planned("--bench", "kv.restore", "--set", "src=remote", "--set", "via=pageable")
    assert two_hop.params["via"] == "pageable" and two_hop.params["peer"] == "remote"


@pytest.mark.parametrize("run_args,named", [
    (["--bench", "kv.restore"], "kv.restore"),
    (["--bench", "net.write", "--bench", "kv.restore", "--set", "strategy=nixl", "--set", "src=file"], "src=file"),
    (["--bench", "kv.offload"], "kv.offload"),
])
def test_a_kv_case_whose_pool_is_not_on_a_peer_is_refused_naming_it(run_args, named):
    with pytest.raises(BadInput, match=named) as caught:
        planned(*run_args)
    assert "\n" not in str(caught.value)


def test_the_launcher_refuses_it_in_one_line_before_any_wait():
    done = subprocess.run([sys.executable, "-m", "kvbench.cluster.launch", "--", "--bench", "kv.restore"], cwd=REPO,
                          check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "kv.restore" in line and "src=remote" in line


def test_a_restore_s_bytes_leave_the_target():
    (case,) = planned("--bench", "kv.restore", "--set", "src=remote", "--set", "strategy=nixl")
    rounds = schedule(Pattern("pairs"), 2)
    for slot in share([case], rounds, 0, ROSTER, "pairs"):
        params = slot.case.params
        assert params["src_host"] == f"h{slot.target}" and params["dst_host"] == f"h{slot.initiator}"
        assert slot.case.params["peer_addr"] == f"10.0.0.{slot.target + 1}"
