"""One box keeps one history: results an older kvbench stored under a drifting host id count as this
box's, and the next run merges them into this box's id (the old id stays as an alias). The commands run
in this process (tests/inproc.py): what they say is the point here, not the process boundary."""

import json

from kvbench.benches import get_bench
from kvbench.benches.params import case_hash
from kvbench.run.this_host import host_facts
from kvbench.store import open_store
from tests.inproc import run_in_process as cli

PARAMS = get_bench("dram.copy").canonical_params({"size": "1MiB", "primitive": "memcpy"})
ROW = {"bench": "dram.copy", "params": PARAMS, "case_hash": case_hash("dram.copy", PARAMS, get_bench("dram.copy").params), "bytes_per_op": 1 << 20, "median_s": 1e-4, "p10_s": 1e-4, "p90_s": 1e-4,
       "mean_s": 1e-4, "stdev_s": 0.0, "min_s": 1e-4, "max_s": 1e-4, "gbps_median": 10.5, "gbps_p10": 10.0,
       "gbps_p90": 11.0, "verified": True, "status": "ok", "warnings": [], "extra": {}}


def _legacy_database(path) -> str:
    """A database holding one run of this box under the id an older kvbench gave it."""
    url = f"sqlite:///{path}"
    store = open_store(url)
    facts = {k: v for k, v in host_facts(gpus=False, dram=False).to_dict().items() if not k.startswith("system_id")}
    facts["numa"] = [{**n, "memory_bytes": 17_140_000_000} for n in facts["numa"]]  # the MemTotal it hashed then
    store.ensure_host("0ld" + "0" * 61, facts["hostname"], facts)
    store.ensure_context("c" * 64, {})
    run = store.begin_run(host_id="0ld" + "0" * 61, context_id="c" * 64, suite="tiny", suite_hash=None,
                          kvbench_version="0.1.0", git_sha=None, git_dirty=None, tags={}, system_state={})
    store.add_result(run, ROW, [1e-4] * 7)
    store.finish_run(run, "complete")
    store.dispose()
    return url


def test_an_older_id_of_this_box_is_read_as_this_box_and_merged_by_the_next_run(tmp_path):
    url = _legacy_database(tmp_path / "k.sqlite")
    hosts = json.loads(cli("host", "list", "--json", "-", "--db", url).stdout)["hosts"]
    assert [h["this_box"] for h in hosts] == [True]  # recognised before any merge, without writing
    before = cli("history", "dram.copy", "--params", "primitive=memcpy", "--db", url)
    assert before.returncode == 0 and "10.5" in before.stdout
    assert cli("run", "--bench", "dram.copy", "--set", "size=1MiB", "--set", "primitive=memcpy",
                   "--db", url).returncode == 0
    listing = json.loads(cli("host", "list", "--json", "-", "--db", url).stdout)
    assert len(listing["hosts"]) == 1 and listing["hosts"][0]["runs"] == 2
    assert list(listing["aliases"]) == ["0ld" + "0" * 61]
    after = cli("history", "dram.copy", "--params", "primitive=memcpy", "--db", url).stdout
    assert after.count("dram.copy") == 1  # one case, one table, holding both runs
    assert [line.split("│")[1].strip() for line in after.splitlines() if line.startswith("│")] == ["1", "2"]


def test_host_merge_joins_two_ids_by_hand(tmp_path):
    url = _legacy_database(tmp_path / "k.sqlite")
    typo = cli("host", "merge", "0ld" + "0" * 61, "rack7-nod03", "--db", url)
    assert typo.returncode == 2 and "no host 'rack7-nod03'" in typo.stderr  # no phantom host made
    merged = cli("host", "merge", "0ld" + "0" * 61, "--db", url, env={"KVBENCH_HOST_ID": "rack7-node03"})
    assert merged.returncode == 0 and "1 run(s) moved" in merged.stdout
    again = cli("host", "merge", "0ld" + "0" * 61, "--db", url)
    assert again.returncode == 2 and "no host '0ld" in again.stderr


def test_a_merged_id_still_reported_writes_to_the_host_it_was_merged_into(tmp_path):
    url = f"sqlite:///{tmp_path / 'k.sqlite'}"
    tiny = ("run", "--bench", "dram.copy", "--set", "size=1MiB", "--samples", "5", "--db", url)
    assert cli(*tiny, env={"KVBENCH_HOST_ID": "rack7-node03"}).returncode == 0
    assert cli(*tiny, env={"KVBENCH_HOST_ID": "node03"}).returncode == 0
    merged = cli("host", "merge", "rack7-node03", "node03", "--db", url)
    assert merged.returncode == 0, merged.stderr
    assert cli(*tiny, env={"KVBENCH_HOST_ID": "rack7-node03"}).returncode == 0  # a box still labelled the old way
    listing = json.loads(cli("host", "list", "--json", "-", "--db", url).stdout)
    assert [(h["id"], h["runs"]) for h in listing["hosts"]] == [("node03", 3)]
    compared = cli("compare", "1", "3", "--db", url, env={"KVBENCH_HOST_ID": "rack7-node03"})
    assert "different hosts" not in compared.stderr


def test_compare_takes_an_older_id_of_this_box_as_this_box(tmp_path):
    url = _legacy_database(tmp_path / "k.sqlite")
    assert cli("run", "--bench", "dram.copy", "--set", "size=1MiB", "--set", "primitive=memcpy",
                   "--samples", "5", "--db", url).returncode == 0
    # the run merged the old id; a copy of the old run exported beforehand still names it
    exported = tmp_path / "old.json"
    doc = json.loads(cli("results", "1", "--format", "json", "--db", url).stdout)
    doc["run"]["host_id"] = "0ld" + "0" * 61
    exported.write_text(json.dumps(doc))
    compared = cli("compare", str(exported), "2", "--db", url)
    assert "different hosts" not in compared.stderr, compared.stderr
