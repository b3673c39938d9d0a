"""GPU health counters judged as rules (kvbench/analyze/accept/health.py) through the stand-in's NVML: an XID,
an uncorrected ECC error, a pending row remap, an NVLink CRC error and a thermal slowdown during a
timed window each FAIL their own rule; a clean GPU passes them all; counters NVML does not give SKIP."""

import pytest

from kvbench.analyze.accept.health import judge_health, load_health
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
from kvbench.run.this_host import host_facts

FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0.005)
RULES = {"xid": "health-xid", "ecc_uncorrected": "health-ecc-uncorrected", "row_remap_pending": "health-row-remap",
         "nvlink_crc": "health-nvlink-errors", "throttle": "health-throttle", "persistence": "health-persistence"}


def _judged(health=None):
    params = get_bench("pcie.h2d").canonical_params({"size": 1 << 20, "memory": "pinned"})
    result = run_case(Case("pcie.h2d", params), host_facts(), FAST)
    assert result.status == "ok", result.reason
    row = result.to_row()
    doc = {"results": [{"bench": row["bench"], "params": row["params"], "case": row["case_hash"], "status": "ok",
                        "metadata": row["extra"]}]}
    return {v.rule: v for v in judge_health(doc, health or load_health())}


def test_a_clean_gpu_passes_every_health_rule(standin):
    standin.health = {}
    verdicts = _judged()
    assert set(verdicts) == set(RULES.values())
    assert all(v.verdict == "PASS" for v in verdicts.values()), verdicts


@pytest.mark.parametrize("fault,value", [("xid", 79), ("ecc_uncorrected", 1), ("row_remap_pending", True),
                                         ("nvlink_crc", 3), ("throttle", 0x40), ("persistence", False)])
def test_each_fault_during_a_case_fails_its_own_rule_naming_the_gpu(standin_two_gpus, fault, value):
    standin_two_gpus.gpu_links = "nvswitch"
    standin_two_gpus.health = {fault: value}
    verdicts = _judged()
    failed = {rule for rule, v in verdicts.items() if v.verdict == "FAIL"}
    assert failed == {RULES[fault]}, verdicts
    verdict = verdicts[RULES[fault]]
    assert "GPU 00000000:17:00.0 in pcie.h2d" in verdict.measured and verdict.cases
    if fault == "throttle":
        assert "hw_thermal" in verdict.measured


def test_counters_nvml_does_not_give_skip_with_the_reason(standin):
    verdicts = _judged()  # the stand-in's default: health counters unsupported, as on many vGPUs
    skipped = {rule for rule, v in verdicts.items() if v.verdict == "SKIP"}
    assert {"health-xid", "health-ecc-uncorrected", "health-row-remap", "health-persistence"} <= skipped
    assert all(v.needs == ("gpu",) and "NVML gave no" in v.why for r, v in verdicts.items() if r in skipped)


def test_a_threshold_is_overridable_and_an_unknown_counter_is_refused(standin, tmp_path):
    standin.health = {"ecc_uncorrected": 1}
    path = tmp_path / "h.toml"
    path.write_text('[[check]]\nid = "ecc"\ncounter = "ecc_uncorrected"\nmax = 5\n')
    assert _judged(load_health(path))["ecc"].verdict == "PASS"
    path.write_text('[[check]]\nid = "x"\ncounter = "ecc_uncorected"\nmax = 0\n')
    with pytest.raises(BadInput, match="unknown counter 'ecc_uncorected'"):
        load_health(path)


def test_accept_level_1_judges_inventory_and_health_counters_without_running_a_suite(tmp_path):
    from tests.gpu_standin.fixture import installed
    from tests.inproc import run_in_process as cli

    with installed(gpus=8) as machine:
        machine.health = {}
        profile = tmp_path / "node.toml"
        assert cli("host", "profile", "-o", str(profile)).returncode == 0
        db = f"sqlite:///{tmp_path / 'k.sqlite'}"
        proc = cli("accept", "--level", "1", "--profile", str(profile), "--db", db)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "inventory-gpus" in proc.stdout and "health-xid" in proc.stdout and "dram-copy" not in proc.stdout
        assert "level 1 took" in proc.stderr and "budget" in proc.stderr
        assert not (tmp_path / "k.sqlite").exists()  # nothing measured, nothing stored
        machine.health = {"xid": 79}
        proc = cli("accept", "--level", "1", "--profile", str(profile))
        assert proc.returncode == 1 and "FAIL: " in proc.stderr and "health-xid" in proc.stderr.splitlines()[-1]
    assert cli("accept", "--level", "4").returncode == 2  # levels 1 to 3


# Issue 58.3: every counter kind each rule reads, planted on the second GPU of a two-GPU case (gpu.p2p's
# far GPU, kv.handoff's decode GPU) while the first stays clean: the rule FAILs naming that GPU alone.
KINDS = [("xid", 79, "health-xid"), ("ecc_uncorrected", 1, "health-ecc-uncorrected"),
         ("row_remap_pending", True, "health-row-remap"), ("row_remap_failed", True, "health-row-remap"),
         ("nvlink_crc", 3, "health-nvlink-errors"), ("nvlink_crc_data", 3, "health-nvlink-errors"),
         ("nvlink_replay", 3, "health-nvlink-errors"), ("nvlink_recovery", 3, "health-nvlink-errors"),
         ("throttle", 0x40, "health-throttle"), ("persistence", False, "health-persistence")]
TWO_GPU_CASES = {"gpu.p2p": {"pair": "0-1", "size": "64KiB"},
                 "kv.handoff": {"model": "Llama-3.1-8B", "tokens": 128, "pair": "0-1"}}


def _judged_case(bench):
    from tests.gpu_standin.test_suites import TINY_MODEL

    given = {**TWO_GPU_CASES[bench], **({"model": str(TINY_MODEL)} if bench == "kv.handoff" else {})}
    result = run_case(Case(bench, get_bench(bench).canonical_params(given)), host_facts(), FAST)
    assert result.status == "ok", result.reason
    row = result.to_row()
    doc = {"results": [{"bench": row["bench"], "params": row["params"], "case": row["case_hash"], "status": "ok",
                        "metadata": row["extra"]}]}
    return {v.rule: v for v in judge_health(doc, load_health())}


@pytest.mark.parametrize("bench", TWO_GPU_CASES)
@pytest.mark.parametrize("fault,value,rule", KINDS, ids=[k[0] for k in KINDS])
def test_every_counter_kind_on_the_second_gpu_fails_its_rule_naming_that_gpu(standin_two_gpus, bench, fault, value,
                                                                            rule):
    standin_two_gpus.gpu_links = "nvswitch"
    standin_two_gpus.health = {f"{fault}@1": value}
    verdicts = _judged_case(bench)
    assert {r for r, v in verdicts.items() if v.verdict == "FAIL"} == {rule}, verdicts
    second, first = standin_two_gpus.gpus[1].bus_id, standin_two_gpus.gpus[0].bus_id
    assert f"GPU {second} in {bench}" in verdicts[rule].measured and first not in verdicts[rule].measured


@pytest.mark.parametrize("bench", TWO_GPU_CASES)
def test_both_gpus_of_a_two_gpu_case_are_read_clean_when_nothing_is_planted(standin_two_gpus, bench):
    standin_two_gpus.gpu_links = "nvswitch"
    standin_two_gpus.health = {}
    verdicts = _judged_case(bench)
    assert all(v.verdict == "PASS" and "2 GPU(s)" in v.measured for v in verdicts.values()), verdicts
