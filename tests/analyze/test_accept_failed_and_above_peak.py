"""Every acceptance rule kind fails a failed case (issue 29.1) and a result above its peak (29.3),
even where other cases of the rule pass: neither may vanish into a PASS or a SKIP. Each test breaks
its check on purpose first (the sweep of failed cases, the above-peak check) and shows the breakage
would pass, so the test is known to catch it."""

import pytest

from kvbench.analyze import case_verdict
from kvbench.analyze.accept import judge as accept
from kvbench.analyze.accept.judge import judge
from kvbench.benches import get_bench
from kvbench.hardware.peaks import ABOVE_PEAK_TOLERANCE, above_peak
from tests.analyze.rules import kv_ratio, load, rate, rule

LINK = {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "under_load": True}

# one rule of every kind, each over dram.copy cases that differ in `threads` (and kv.restore for a ratio)
SIZE = '{ size = "256MiB" }'
RULES = [rule("fraction", "dram.copy", params=SIZE, min_fraction_of_peak=0.3),
         rule("absolute", "dram.copy", params=SIZE, min=rate(1)),
         rule("ratio", "kv.restore", ratio=kv_ratio(0.5)),
         rule("contest", "kv.restore", ratio=kv_ratio(0.5, of='["host", "host-numpy"]')),
         rule("spread", "dram.copy", params=SIZE, spread='{ over = "threads", max = 0.9 }'),
         rule("link", "dram.copy", params=SIZE, link_at_max=True),
         rule("replays", "dram.copy", params=SIZE, replay_unchanged=True)]
KINDS = ["fraction", "absolute", "ratio", "contest", "spread", "link", "replays"]


def result(bench, status="ok", efficiency=0.5, **params):
    return {"bench": bench, "params": get_bench(bench).canonical_params(params), "case": f"{bench}{params}",
            "status": status, "reason": "integrity: destination differs at byte 4096" if status == "failed" else None,
            "gbps": {"median": 10.0 * efficiency / 0.5} if status == "ok" else None, "peak_gbps": 20.0,
            "efficiency": efficiency if status == "ok" else None,
            "metadata": {"link": LINK, "pcie_replay_delta": 0}}


def run_doc(broken: str | None = None, above: str | None = None):
    """Two threads' dram.copy cases and two kv.restore pairs, all passing every rule; `broken` fails
    one more case of that rule's benchmark, `above` puts one judged case above its peak."""
    results = [result("dram.copy", size="256MiB", threads=t) for t in (1, 2)]
    results += [result("kv.restore", strategy=s, tokens=n) for s in ("host", "host-numpy", "contiguous")
                for n in (1024, 2048)]
    if broken in ("ratio", "contest"):  # the second side of the second pair failed
        results[-1].update(status="failed", reason="integrity: destination differs at byte 4096", gbps=None,
                           efficiency=None)
    elif broken:
        results.append(result("dram.copy", "failed", size="256MiB", threads=4))
    if above in ("ratio", "contest"):
        results[-1].update(efficiency=1.5)  # contiguous, tokens=2048: the ratio's bottom side
    elif above:
        results[1].update(efficiency=1.5, gbps={"median": 30.0})
    return {"results": results}


@pytest.fixture
def rules(tmp_path):
    return load(tmp_path, *RULES)


def verdicts_of(doc, rules, rule_id):
    return [v for v in judge(doc, [rules]) if v.rule == rule_id]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_passes_the_clean_run(rules, kind):
    assert {v.verdict for v in verdicts_of(run_doc(), rules, kind)} == {"PASS"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_case_fails_every_rule_kind_beside_passing_cases(rules, kind, monkeypatch):
    doc = run_doc(broken=kind)
    verdicts = verdicts_of(doc, rules, kind)
    failed = [v for v in verdicts if v.verdict == "FAIL"]
    assert failed and "differs at byte 4096" in failed[0].why, verdicts
    # the check broken on purpose: without the sweep of failed cases, some kinds would pass it
    if kind in ("ratio", "contest", "spread", "link", "replays"):
        monkeypatch.setattr(accept, "_failed_cases", lambda rule, doc: [])
        assert "FAIL" not in {v.verdict for v in verdicts_of(doc, rules, kind)}


@pytest.mark.parametrize("kind", KINDS)
def test_a_result_above_its_peak_fails_every_rule_kind(rules, kind, monkeypatch):
    doc = run_doc(above=kind)
    failed = [v for v in verdicts_of(doc, rules, kind) if v.verdict == "FAIL"]
    assert failed and "measurement bug" in failed[0].why and "150.0% of 20.0 GB/s" == failed[0].measured
    monkeypatch.setattr(case_verdict, "above_peak", lambda efficiency: False)  # the check broken on purpose (one for every kind)
    assert "FAIL" not in {v.verdict for v in verdicts_of(doc, rules, kind)}


def test_one_named_tolerance_decides_above_peak():
    assert ABOVE_PEAK_TOLERANCE == 0.02
    assert not above_peak(1.0 + ABOVE_PEAK_TOLERANCE) and above_peak(1.0 + ABOVE_PEAK_TOLERANCE + 1e-9)
    assert not above_peak(None)
