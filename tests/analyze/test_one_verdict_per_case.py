"""One case, one verdict (issue 44.6): a failed case gets exactly one verdict of each rule that covers it,
a FAIL, for every rule kind and every way a case fails (a side of a ratio, a contestant, a pair of an
NVLink rule, a case the rule names or one beside it); the table and the JSON never hold a SKIP and a
FAIL of one case. The slip the audit planted (a plain rule judging its failed case SKIP, the sweep of
failed cases adding a FAIL beside it) is planted here too, and still gives one FAIL."""

from dataclasses import replace

import pytest

from kvbench.analyze.accept import judge as accept
from kvbench.analyze.accept.judge import judge
from tests.analyze.rules import load, rule
from tests.analyze.test_accept_failed_and_above_peak import KINDS, RULES, result, run_doc

NVLINK = rule("nvlink", "gpu.p2p", params='{ engine = "ce", direction = "write", bidir = "no" }',
              min_fraction_of_peak=0.8, link='"nvlink"')


def p2p(pair: str, status: str = "ok", kind: str = "nvlink") -> dict:
    r = result("gpu.p2p", status, pair=pair, engine="ce", direction="write", bidir="no")
    r["metadata"] = {**r["metadata"], "peer_link": {"kind": kind}}
    return r


def failed_ids(doc) -> set[str]:
    return {r["case"] for r in doc["results"] if r["status"] == "failed"}


def assert_one_fail_per_failed_case(verdicts, doc, rule_id):
    mine = [v for v in verdicts if v.rule == rule_id]
    labels = [v.case for v in mine]
    assert len(labels) == len(set(labels)), f"{rule_id}: one case judged twice: {mine}"
    for case in failed_ids(doc):
        covering = [v for v in mine if case in v.cases]
        assert [v.verdict for v in covering] == ["FAIL"], f"{rule_id} {case}: {covering}"
        assert "differs at byte 4096" in covering[0].why


def docs():
    """(name, doc, rule id): every way a case of a rule can fail."""
    for kind in KINDS:
        yield kind, run_doc(broken=kind), kind
    top = run_doc()  # the `of` side of a ratio failed, not its `to` side
    next(r for r in top["results"] if r["params"].get("strategy") == "host").update(
        status="failed", reason="integrity: destination differs at byte 4096", gbps=None, efficiency=None)
    yield "ratio-of", top, "ratio"
    yield "contest-of", top, "contest"
    named = run_doc()  # a case the rule names itself failed (not one beside it)
    named["results"][0].update(status="failed", reason="integrity: destination differs at byte 4096", gbps=None,
                               efficiency=None)
    for kind in ("fraction", "absolute", "spread", "link", "replays"):
        yield f"{kind}-named", named, kind
    yield "nvlink", {"results": [p2p("0-1"), p2p("1-0", "failed")]}, "nvlink"
    yield "nvlink-pcie", {"results": [p2p("0-1"), p2p("1-0", "failed", kind="pcie")]}, "nvlink"


CASES = list(docs())


@pytest.fixture
def rules(tmp_path):
    return load(tmp_path, *RULES, NVLINK)


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_a_failed_case_has_one_verdict_a_fail(rules, name):
    _, doc, rule_id = next(c for c in CASES if c[0] == name)
    assert failed_ids(doc)
    assert_one_fail_per_failed_case(judge(doc, [rules]), doc, rule_id)


@pytest.mark.parametrize("slip", ["SKIP", "PASS"])
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_a_kind_that_judges_its_failed_case_otherwise_still_gives_one_fail(rules, name, slip, monkeypatch):
    """The planted slip: a kind's own path judges the failed case SKIP (or PASS), with or without its id."""
    _, doc, rule_id = next(c for c in CASES if c[0] == name)
    real = accept._judge_kind

    def slipped(rule, doc):
        out = real(rule, doc)
        return [replace(v, verdict=slip, cases=v.cases if i % 2 else ()) if v.verdict == "FAIL" else v
                for i, v in enumerate(out)]

    monkeypatch.setattr(accept, "_judge_kind", slipped)
    verdicts = judge(doc, [rules])
    mine = [v for v in verdicts if v.rule == rule_id]
    assert len({v.case for v in mine}) == len(mine), mine
    assert sum(v.verdict == "FAIL" for v in mine) == len(failed_ids(doc)) == 1, mine
