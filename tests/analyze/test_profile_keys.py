"""Every `[expect]` key of a host profile is judged by an inventory rule of its own, whatever rule file
is in use (issue 43.4: `nvlink = true` was dropped unless a SKU rule file with an NVLink rule was
selected), and a key the run recorded no fact for is INCOMPLETE whatever else passed (issue 44.5)."""

import pytest

from kvbench.analyze.accept.inventory import inventory_verdicts
from kvbench.analyze.accept.judge import Verdict
from kvbench.analyze.accept.profile import Expect, Profile
from kvbench.analyze.accept.verdict import accept_overall, expected_here

H200 = {"index": 0, "name": "NVIDIA H200", "bus_id": "0000:17:00.0",
        "link": {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}}
TWO = {"gpus": [H200, {**H200, "index": 1, "bus_id": "0000:18:00.0"}]}
PASSED = Verdict("dram-copy", "dram.copy", "all", "PASS", "9 GB/s", "≥ 1 MB/s", "")
# one value each key can take: a test that a new key without a check fails here
VALUES = {"gpus": 2, "gpu_model": "H200", "pcie_gen": 5, "pcie_width": 16, "nics": 1, "nic_gbps": 100.0, "nvme": 1,
          "numa_nodes": 1, "dram_gb": 100.0, "dram_channels": 8, "nvlink": True,
          "gpu_serials": ["1650000000", "1650000001"]}


def p2p(pair: str, kind: str | None) -> dict:
    meta = {"peer_link": {"kind": kind}} if kind else {}
    return {"bench": "gpu.p2p", "params": {"pair": pair}, "status": "ok", "metadata": meta, "case": f"c{pair}"}


def test_every_expect_key_has_its_inventory_rule():
    assert set(VALUES) == set(Expect.model_fields), "a new [expect] key needs a value here and a check in inventory.py"
    for key, value in VALUES.items():
        profile = Profile.model_validate({"expect": {key: value}})
        assert [v.rule for v in inventory_verdicts(profile, TWO, [])] == [f"inventory-{key}"], key


@pytest.mark.parametrize("facts", [{"gpus": []}, {"gpus": [H200]}, {"gpu_reason": "no NVIDIA driver"}])
def test_nvlink_promised_on_a_box_with_fewer_than_two_gpus_fails_without_any_rule_file(facts):
    (verdict,) = inventory_verdicts(Profile.model_validate({"expect": {"nvlink": True}}), facts, [])
    assert verdict.verdict == "FAIL" and "no pair to join" in verdict.measured
    assert accept_overall([PASSED, verdict], expected_here(facts, None)).word == "FAIL"


def test_nvlink_is_judged_from_the_links_the_run_recorded():
    profile = Profile.model_validate({"expect": {"nvlink": True}})
    (ok,) = inventory_verdicts(profile, TWO, [p2p("0-1", "nvlink"), p2p("1-0", "nvlink")])
    assert ok.verdict == "PASS" and "2 ordered pairs" in ok.measured
    (bad,) = inventory_verdicts(profile, TWO, [p2p("0-1", "nvlink"), p2p("1-0", "pcie")])
    assert bad.verdict == "FAIL" and "1-0 pcie" in bad.measured
    for results in ([], [p2p("0-1", "nvlink")], [p2p("0-1", None), p2p("1-0", None)]):
        (unread,) = inventory_verdicts(profile, TWO, results)
        assert unread.verdict == "SKIP" and "run gpu.p2p" in unread.why
        assert accept_overall([PASSED, unread], expected_here(TWO, profile)).word == "INCOMPLETE"
    # a profile that promises 4 GPUs: the pairs of the GPUs that went missing are not judged either
    *_, missing = inventory_verdicts(Profile.model_validate({"expect": {"nvlink": True, "gpus": 4}}), TWO,
                                     [p2p("0-1", "nvlink"), p2p("1-0", "nvlink")])
    assert missing.verdict == "SKIP" and "0-2" in missing.why
    assert inventory_verdicts(Profile.model_validate({"expect": {"nvlink": False}}), TWO, []) == []


UNRECORDED = {  # a key, and host facts that do not record what it needs
    "dram_channels": {"dram": {"reason": "dmidecode is not installed"}},
    "dram_gb": {"dram": {}, "numa": []},
    "numa_nodes": {"numa": []},
    "pcie_gen": {"gpus": [{**H200, "link": {}}]},
    "nvlink": TWO,
}


@pytest.mark.parametrize("key", list(UNRECORDED))
def test_a_promised_fact_the_run_did_not_record_is_incomplete_beside_a_passing_rule(key):
    profile = Profile.model_validate({"expect": {key: VALUES[key]}})
    for facts in (UNRECORDED[key], None):
        (skipped,) = inventory_verdicts(profile, facts, [])
        assert skipped.verdict == "SKIP"
        for expected in (expected_here(facts, profile), {}):  # whatever the expectations computed say
            overall = accept_overall([PASSED, skipped], expected)
            assert overall.word == "INCOMPLETE" and f"inventory-{key}" in overall.line, overall.line
            assert accept_overall([PASSED, PASSED, skipped], expected).exit_status() == 3


# Issue 58.7: every key's missing-fact path, and dram_channels judged (not only skipped).
NO_SERIAL = {"gpus": [H200, {**H200, "index": 1, "bus_id": "0000:18:00.0"}]}  # NVML gave no serial
MISSING = {  # a key → (host facts without what it needs, the verdict that gives: SKIP where unknown)
    "gpus": ({"gpu_reason": "no NVIDIA driver"}, "FAIL"),
    "gpu_model": ({"gpu_reason": "no NVIDIA driver"}, "FAIL"),
    "gpu_serials": (NO_SERIAL, "SKIP"),
    "pcie_gen": ({"gpus": [{**H200, "link": {}}]}, "SKIP"),
    "pcie_width": ({"gpus": [{**H200, "link": {"max_gen": 5}}]}, "SKIP"),
    "nics": ({"hostname": "n0"}, "FAIL"),  # facts, none of them NICs
    "nic_gbps": ({"nics": [{"name": "eth0", "rate_gbit": None}]}, "FAIL"),
    "nvme": ({"hostname": "n0"}, "FAIL"),
    "numa_nodes": ({"numa": []}, "SKIP"),
    "dram_gb": ({"dram": {}, "numa": [{"node": 0, "memory_bytes": None}]}, "SKIP"),
    "dram_channels": ({"dram": {"total_bytes": 64 << 30}}, "SKIP"),
    "nvlink": (TWO, "SKIP"),
}


def test_every_expect_key_has_a_missing_fact_case():
    assert set(MISSING) == set(VALUES)


@pytest.mark.parametrize("key", list(MISSING))
def test_a_key_whose_fact_is_missing_never_passes_and_stops_an_otherwise_passing_acceptance(key):
    profile = Profile.model_validate({"expect": {key: VALUES[key]}})
    facts, word = MISSING[key]
    for given, want in ((facts, word), (None, "SKIP")):  # None: the run recorded no host facts at all
        (verdict,) = inventory_verdicts(profile, given, [])
        assert verdict.verdict == want and verdict.rule == f"inventory-{key}", (given, verdict)
        for expected in (expected_here(given, profile), {}):
            overall = accept_overall([PASSED, verdict], expected)
            assert overall.word == ("INCOMPLETE" if want == "SKIP" else "FAIL"), overall.line
            assert f"inventory-{key}" in overall.line, overall.line


@pytest.mark.parametrize("channels,word", [(8, "PASS"), (6, "FAIL"), (12, "FAIL")])
def test_dram_channels_is_judged_from_the_channels_the_run_recorded(channels, word):
    profile = Profile.model_validate({"expect": {"dram_channels": 8}})
    (verdict,) = inventory_verdicts(profile, {"dram": {"channels": channels, "total_bytes": 512 << 30}}, [])
    assert verdict.verdict == word and verdict.measured == f"{channels} channel(s)", verdict
    assert verdict.value == channels and verdict.limit == verdict.limit_max == 8
    assert accept_overall([PASSED, verdict], expected_here({}, profile)).word == word
