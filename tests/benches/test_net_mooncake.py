"""net.write / net.read over Mooncake's Transfer Engine (transport=mooncake), and side by side with
NIXL (transport=both): in child processes that find the test-only CUDA driver (tests/mooncake_driver.py)."""

import pytest

from kvbench.backends.mooncake import mooncake_unavailable_reason
from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from tests.mooncake_driver import run_case_in_child

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")
SMALL = {"block_size": "64KiB", "batch": 16}


@pytest.mark.parametrize("bench", ["net.write", "net.read"])
@pytest.mark.parametrize("peer", ["inproc", "local"])
def test_mooncake_transfers_are_verified(mooncake_env, bench, peer):
    result = run_case_in_child(mooncake_env, bench, {**SMALL, "peer": peer, "transport": "mooncake"})
    assert result["status"] == "ok", result["reason"]
    assert result["verified"] and result["bytes_per_op"] == 16 * 65536
    meta = result["metadata"]
    assert meta["transport"] == "mooncake" and meta["nixl_backend"] is None  # NIXL moved none of the measured bytes
    mooncake = meta["mooncake"]
    assert (mooncake["metadata"], mooncake["protocol"]) == ("P2PHANDSHAKE", "tcp")
    assert mooncake["peer_segment"].startswith("127.0.0.1:") and mooncake["version"].startswith("mooncake-transfer")


def test_a_poisoned_far_side_that_mooncake_never_wrote_fails_the_check(mooncake_env):
    result = run_case_in_child(mooncake_env, "net.write", {**SMALL, "peer": "local", "transport": "mooncake"},
                               no_op=True)
    assert result["status"] == "failed" and "crc32 differs" in result["reason"], result["reason"]


def test_a_local_buffer_mooncake_never_read_into_fails_the_check(mooncake_env):
    result = run_case_in_child(mooncake_env, "net.read", {**SMALL, "peer": "inproc", "transport": "mooncake"},
                               no_op=True)
    assert result["status"] == "failed" and "crc32 differs" in result["reason"], result["reason"]


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_a_dead_or_hung_peer_fails_the_transfer(mooncake_env, how):
    """A killed peer refuses the connection; a stopped one never answers, and the engine's own
    deadline (the case's timeout_s, MC_TRANSFER_TIMEOUT) ends the wait."""
    result = run_case_in_child(mooncake_env, "net.write", {**SMALL, "peer": "local", "transport": "mooncake",
                                                           "timeout_s": 15}, stop_peer=how)
    assert result["error"] and "Mooncake transfer failed" in result["error"], result


def test_both_times_mooncake_against_nixl_and_policy_and_report_show_the_paired_ratio(mooncake_env, tmp_path):
    """`kvbench run --set transport=both` as a user types it; then `policy` and `report` read the
    stored ratio (Mooncake / NIXL, per pair of samples) back without the driver."""
    import json

    from tests.conftest import run_cli

    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    ran = run_cli("run", "--bench", "net.write", "--set", "transport=both", "--set", "peer=local", "--set",
                  "block_size=64KiB", "--set", "batch=16", "--samples", "5", "--max-time", "2", "--db", db,
                  "--json", str(tmp_path / "run.json"), env=mooncake_env, timeout=400)
    assert ran.returncode == 0, ran.stderr[-3000:]
    (result,) = json.loads((tmp_path / "run.json").read_text())["results"]
    assert result["status"] == "ok" and result["verified"]
    paired = result["metadata"]["paired"]
    assert paired["against"] == {"transport": "nixl"} and paired["pairs"] >= 5
    assert paired["p10"] <= paired["median"] <= paired["p90"]
    assert result["metadata"]["nixl_backend"] == "UCX" and result["metadata"]["mooncake"]["protocol"] == "tcp"
    policy = run_cli("policy", "--db", db, "--json", "-")
    assert policy.returncode == 0, policy.stderr[-2000:]
    (choice,) = json.loads(policy.stdout)["transports"]
    assert (choice["bench"], choice["size_bytes"], choice["between"]) == ("net.write", 65536, "local")
    assert choice["ratio"] == paired["median"] and choice["winner"] in ("mooncake", "nixl", "within noise")
    shown = run_cli("policy", "--db", db)
    assert shown.returncode == 0 and "which transport wins where" in shown.stdout, shown.stderr[-2000:]
    report = run_cli("report", "--db", db, "-o", str(tmp_path / "r.md"), "--format", "markdown")
    assert report.returncode == 0, report.stderr[-2000:]
    text = (tmp_path / "r.md").read_text()
    assert "Mooncake or NIXL: which transport wins where" in text and f"{paired['median']:.2f}" in text


def test_without_the_driver_a_mooncake_case_is_skipped_with_the_reason(facts):
    from kvbench.measure import Settings
    from kvbench.plan.cases import Case
    from kvbench.run.runner import run_case

    if mooncake_unavailable_reason() is None:
        pytest.skip("Mooncake loads in this process (a CUDA driver is present)")
    spec = get_bench("net.write")
    result = run_case(Case("net.write", spec.canonical_params({**SMALL, "transport": "mooncake"})), facts,
                      Settings(samples=5, min_sample_s=0.002, warmup_s=0))
    assert result.status == "skipped" and result.reason.startswith("transport=mooncake: Mooncake")


@pytest.mark.parametrize("given,words", [
    ({"mooncake_metadata": "etcd://10.0.0.1:2379"}, "mooncake_metadata=etcd://10.0.0.1:2379 needs transport=mooncake"),
    ({"transport": "mooncake", "mooncake_metadata": "zookeeper"}, "bad mooncake_metadata='zookeeper'"),
    ({"transport": "mooncake", "mooncake_device": "mlx5_0"}, "needs mooncake_protocol=rdma"),
    ({"transport": "both", "rails": "2"}, "rails and net_devices are UCX's"),
])
def test_bad_transport_settings_are_refused_in_one_line(given, words):
    spec = get_bench("net.write")
    with pytest.raises(BadInput, match=words.replace("(", r"\(").replace(")", r"\)")) as caught:
        spec.validate(spec.canonical_params(given))
    assert "\n" not in str(caught.value)


def test_the_transport_parameters_leave_earlier_cases_the_same_cases():
    from kvbench.benches.params import case_hash

    spec = get_bench("net.write")
    before = {k: v for k, v in spec.canonical_params({}).items()
              if k not in ("transport", "mooncake_metadata", "mooncake_protocol", "mooncake_device")}
    assert case_hash("net.write", spec.canonical_params({}), spec.params) == case_hash(
        "net.write", before, {k: v for k, v in spec.params.items() if k in before})


def test_http_metadata_through_the_wheel_s_own_metadata_server(mooncake_env):
    """mooncake_metadata=http://…: the engines publish and find their segments through the HTTP
    metadata server the wheel ships (python -m mooncake.http_metadata_server) instead of the P2P handshake."""
    import subprocess
    import sys
    import time
    import urllib.request

    from kvbench.peers.protocol import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "mooncake.http_metadata_server", "--port", str(port), "--host",
                               "127.0.0.1", "--log-level", "WARNING"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=mooncake_env)
    try:
        url = f"http://127.0.0.1:{port}/metadata"
        deadline = time.monotonic() + 60
        while True:  # up once it answers at all (a missing key is an HTTP error, which is an answer)
            try:
                urllib.request.urlopen(f"{url}?key=probe", timeout=2)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "the metadata server did not start"
                time.sleep(0.2)
        result = run_case_in_child(mooncake_env, "net.write", {**SMALL, "peer": "local", "transport": "mooncake",
                                                               "mooncake_metadata": url})
        assert result["status"] == "ok" and result["verified"], result["reason"]
        assert result["metadata"]["mooncake"]["metadata"] == url
    finally:
        server.kill()
        server.wait(timeout=10)
