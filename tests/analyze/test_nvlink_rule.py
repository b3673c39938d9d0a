"""The NVLink acceptance rule (issue 30): every ordered pair's gpu.p2p copy against its NVLink peak;
a pair without NVLink is never judged against its PCIe peak; where the host profile expects NVLink
the verdict fails closed — a pair without it, gpu.p2p skipped or not run, a pair not measured — and
with one GPU and no such profile the rule skips without making the acceptance INCOMPLETE."""

import pytest

from kvbench.analyze.accept.judge import judge, load_rules, rules_for_host
from kvbench.analyze.accept.kinds.nvlink import fail_closed
from kvbench.analyze.accept.profile import Profile, load_profile, shipped_profiles
from kvbench.analyze.accept.verdict import accept_overall, expected_here
from kvbench.benches import get_bench
from kvbench.errors import BadInput

H200 = [{"name": "NVIDIA H200"}]
NVLINK = {"kind": "nvlink", "links": 18, "via": "nvswitch", "version": 4}
PCIE = {"kind": "pcie", "note": "PCIe peer-to-peer (no NVLink)"}


def _p2p(pair, efficiency=0.9, link=NVLINK, status="ok", reason=None):
    params = get_bench("gpu.p2p").canonical_params({"pair": pair})
    return {"bench": "gpu.p2p", "params": params, "case": f"c{pair}", "status": status, "reason": reason,
            "gbps": {"median": 450 * efficiency}, "peak_gbps": 450.0, "efficiency": efficiency,
            "metadata": {"peer_link": link}}


def _pairs(n):
    return [f"{a}-{b}" for a in range(n) for b in range(n) if a != b]


def _rules():
    return [r for r in rules_for_host(H200) if r.name == "h200"]


def _nvlink(verdicts):
    return [v for v in verdicts if v.rule == "h200-nvlink-every-pair"]


def _profile(gpus=2, nvlink=True):
    return Profile(name="p", expect={"gpus": gpus, "gpu_model": "H200", "nvlink": nvlink})


def test_every_ordered_pair_is_judged_against_its_nvlink_peak():
    doc = {"results": [_p2p(p) for p in _pairs(8)[:-1]] + [_p2p("7-6", efficiency=0.5)]}
    verdicts = _nvlink(judge(doc, _rules()))
    assert len(verdicts) == 56 and sum(v.verdict == "PASS" for v in verdicts) == 55
    (slow,) = [v for v in verdicts if v.verdict == "FAIL"]
    assert slow.case.startswith("pair=7-6") and slow.value == 0.5 and slow.limit == 0.80


def test_a_pair_without_nvlink_skips_naming_its_link_and_fails_where_the_profile_expects_nvlink():
    doc = {"results": [_p2p("0-1"), _p2p("1-0", efficiency=0.95, link=PCIE)]}  # 95 % of a PCIe peak proves nothing
    verdicts = _nvlink(judge(doc, _rules()))
    assert [v.verdict for v in verdicts] == ["PASS", "SKIP"] and "has no nvlink: PCIe peer-to-peer" in verdicts[1].why
    closed = _nvlink(fail_closed(judge(doc, _rules()), _profile(), _rules()))
    assert [v.verdict for v in closed] == ["PASS", "FAIL"] and "expects NVLink between every pair" in closed[1].why
    assert _nvlink(fail_closed(judge(doc, _rules()), _profile(nvlink=False), _rules())) == verdicts


@pytest.mark.parametrize("results", [[], [_p2p("0-1", status="skipped", reason="gpu.p2p copies between two GPUs; "
                                                                                   "this host has 1")]],
                         ids=["not-run", "skipped"])
def test_gpu_p2p_not_run_or_skipped_fails_closed_under_a_profile_that_expects_nvlink(results):
    verdicts = fail_closed(judge({"results": results}, _rules()), _profile(gpus=2), _rules())
    nvlink = _nvlink(verdicts)
    assert nvlink and all(v.verdict == "FAIL" for v in nvlink)
    assert any("did not measure pair(s)" in v.why and "1-0" in v.why for v in nvlink)  # 0-1: its skip, a FAIL
    assert accept_overall(verdicts, expected_here(None, _profile(gpus=2))).word == "FAIL"


def test_pairs_the_run_did_not_measure_fail_closed():
    doc = {"results": [_p2p(p) for p in _pairs(8) if p != "3-5"]}
    (missing,) = [v for v in _nvlink(fail_closed(judge(doc, _rules()), _profile(gpus=8), _rules()))
                  if v.verdict == "FAIL"]
    assert "did not measure pair(s) 3-5" in missing.why


def test_one_gpu_without_such_a_profile_skips_without_making_the_acceptance_incomplete():
    skipped = _p2p("0-1", status="skipped", reason="gpu.p2p copies between two GPUs; this host has 1")
    verdicts = judge({"results": [skipped]}, _rules())
    (verdict,) = _nvlink(verdicts)
    assert verdict.verdict == "SKIP" and verdict.needs == ("multi-gpu",)
    facts = {"gpus": [{"name": "NVIDIA H200", "index": 0}]}
    assert not any("nvlink" in r for r in accept_overall(verdicts, expected_here(facts, None)).reasons)


def test_the_shipped_sku_rules_and_profiles_expect_nvlink():
    assert [r.id for f in rules_for_host([{"name": "NVIDIA B200"}]) for r in f.rule if r.link] == ["b200-nvlink-every-pair"]
    assert [r.id for f in rules_for_host(H200) for r in f.rule if r.link] == ["h200-nvlink-every-pair"]
    for name in ("h200-sxm-8gpu", "b200-8gpu"):
        assert load_profile(shipped_profiles()[name]).expect.nvlink is True


def test_a_link_rule_without_a_fraction_of_peak_is_refused(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('name = "t"\n[[rule]]\nid = "x"\nbench = "gpu.p2p"\nlink = "nvlink"\nmin = { value = 1, unit = "GB/s" }\n')
    with pytest.raises(BadInput, match="give min_fraction_of_peak"):
        load_rules(path)
