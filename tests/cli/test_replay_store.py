"""A replay kept in the database and read back: the stored record names the trace's digest, the policy,
the capacities and the result ids each price came from, the same as the replay that stored it, so a plan
can be re-derived; a replay with no database in use creates none."""

import json

from kvbench.store import open_store
from tests.analyze.decide.replay.test_pricing import restore_rows
from tests.cli.test_replay import small_trace  # noqa: F401  (the fixture)
from tests.conftest import run_cli
from tests.store.test_database import ROW

HOST = {"KVBENCH_HOST_ID": "replay-box"}


def _measured(url):
    """This host's kv.restore DRAM → GPU sweep, stored (what prices the dram tier)."""
    store = open_store(url)
    store.ensure_host("replay-box", "box", {})
    store.ensure_context("c" * 64, {})
    run = store.begin_run(host_id="replay-box", context_id="c" * 64, suite=None, suite_hash=None, kvbench_version="0",
                          git_sha=None, git_dirty=None, tags={}, system_state={})
    ids = [store.add_result(run, {**ROW, **{k: r[k] for k in ("bench", "params", "case_hash", "bytes_per_op",
                                                                "median_s", "gbps_median", "extra")}}, [r["median_s"]])
           for r in restore_rows()]
    store.finish_run(run, "complete")
    store.dispose()
    return ids


def test_a_stored_replay_reads_back_the_digest_policy_capacities_and_price_ids(tmp_path, small_trace):  # noqa: F811
    url = f"sqlite:///{tmp_path}/kv.sqlite"
    ids = _measured(url)
    done = run_cli("replay", "--trace", small_trace, "--model", "Llama-3.1-8B", "--gpu", "H100", "--db", url,
                   "--tier", "hbm=20GB", "--tier", "dram=1TB", "--config", "dram=64GB", "--policy", "vllm",
                   "--json", "-", env=HOST)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert "stored as replay 1" in done.stderr
    shown = run_cli("replay", "--show", "1", "--db", url, "--json", "-", env=HOST)
    assert shown.returncode == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert record["trace_sha256"] == doc["trace"]["sha256"] and record["policy"] == "vllm"
    assert (record["model"], record["dtype"], record["tp"], record["trace_block_tokens"]) == ("Llama-3.1-8B", "bf16",
                                                                                             1, 512)
    assert [[(t["name"], t["capacity_bytes"], t["policy"]) for t in c["tiers"]] for c in record["configs"]] == [
        [("hbm", 20 * 10**9, "vllm"), ("dram", 10**12, "vllm")], [("dram", 64 * 10**9, "vllm")]]
    dram = record["configs"][0]["prices"][1]["legs"][0]
    assert (dram["link"], dram["kind"], dram["result_ids"]) == ("DRAM → GPU", "measured", ids)
    assert record["configs"][0]["prices"][1]["legs"][1]["kind"] == "spec"  # the write-back: nothing measured
    for stored, replayed in zip(record["configs"], doc["configs"], strict=True):
        assert stored["hit_ratio"] == replayed["hit_ratio"] and stored["ttft_s"]["p99"] == replayed["ttft_s"]["p99"]
    assert record["document"] == doc
    table = run_cli("replay", "--show", "1", "--db", url, env=HOST)
    assert table.returncode == 0 and "replay 1 stored" in table.stdout and ", ".join(map(str, ids)) in table.stdout
    listed = run_cli("replay", "--list", "--db", url)
    assert listed.returncode == 0 and "hbm=20GB + dram=1TB" in listed.stdout


def test_no_store_keeps_nothing_and_no_database_in_use_creates_none(tmp_path, small_trace):  # noqa: F811
    url = f"sqlite:///{tmp_path}/kv.sqlite"
    _measured(url)
    done = run_cli("replay", "--trace", small_trace, "--model", "Llama-3.1-8B", "--gpu", "H100", "--db", url,
                   "--tier", "dram=1TB", "--no-store", env=HOST)
    assert done.returncode == 0, done.stderr
    store = open_store(url, read_only=True)
    assert store.replays() == []
    store.dispose()
    fresh = tmp_path / "none.sqlite"
    done = run_cli("replay", "--trace", small_trace, "--model", "Llama-3.1-8B", "--gpu", "H100", "--db",
                   f"sqlite:///{fresh}", "--tier", "dram=1TB", env=HOST)
    assert done.returncode == 0, done.stderr
    assert not fresh.exists()
    missing = run_cli("replay", "--show", "7", "--db", url)
    assert missing.returncode == 2 and "no replay 7" in missing.stderr
