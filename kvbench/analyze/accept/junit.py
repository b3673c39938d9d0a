"""Acceptance verdicts as JUnit XML, the report every CI system shows: one testsuite for the run,
with its time, start, host and what it ran on; one testcase per verdict, with the measured value
on passing cases too."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime
from typing import Any

from kvbench.analyze.accept.judge import Verdict
from kvbench.analyze.runs import RunDocument
from kvbench.overall import PASS, Overall


def _seconds(run: dict[str, Any]) -> float:
    try:
        return max(0.0, (datetime.fromisoformat(str(run["ended_at"])) -
                         datetime.fromisoformat(str(run["started_at"]))).total_seconds())
    except (KeyError, TypeError, ValueError):
        return 0.0


def properties(doc: RunDocument) -> dict[str, str]:
    """What the run was, for a CI page: run and host ids, GPUs, driver, kvbench version, suite."""
    run, host = doc["run"], doc.get("host") or {}
    facts, context = host.get("facts") or {}, (doc.get("context") or {}).get("facts") or {}
    gpus = sorted({g.get("name") or "?" for g in facts.get("gpus") or []})
    found = {
        "run_id": run["id"], "host_id": run["host_id"], "hostname": host.get("hostname") or facts.get("hostname"),
        "gpu": ", ".join(gpus) or "none", "driver": context.get("nvidia_driver") or "none",
        "cuda_driver": context.get("cuda_driver"), "kvbench_version": run.get("kvbench_version"),
        "suite": run.get("suite"),
    }
    return {k: str(v) for k, v in found.items() if v is not None}


def _verdict_properties(listed: ET.Element, name: str, v: Verdict) -> None:
    """The verdict as data, as accept --json gives it, as the suite's properties `<testcase name>.<key>`
    (Surefire's and Jenkins' schemas allow no properties inside a testcase): the measured value and
    the threshold as numbers with their unit, the case ids it judged, and those it did not, with why."""
    found = {"value": v.value, "unit": v.unit, "limit": v.limit, "limit_max": v.limit_max,
             "judged": " ".join(v.cases), "not_judged": "; ".join(f"{c}: {why}" for c, why in v.not_judged)}
    for key, value in found.items():
        if value is not None and value != "":
            ET.SubElement(listed, "property", name=f"{name}.{key}",
                          value=f"{value:g}" if isinstance(value, float) else str(value))


def junit_xml(verdicts: list[Verdict], doc: RunDocument, name: str = "kvbench accept",
              overall: Overall | None = None) -> str:
    """One testsuite (time: the run's wall seconds; its start, UTC, as the `timestamp` property) holding one testcase
    per verdict; FAIL (and INCOMPLETE: failed only while contended) as <failure>, SKIP as <skipped>, and every case's measured value and threshold
    in its <system-out>. Class names keep a benchmark id whole when split at their last dot
    (`kvbench.accept.dram_copy`). `overall` adds one testcase for the whole acceptance, failing on FAIL
    and on INCOMPLETE (a CI page must not go green on skips)."""
    run, props = doc["run"], properties(doc)
    if overall is not None:
        props["verdict"] = overall.word
    whole = overall is not None and overall.word != PASS
    suite = ET.Element("testsuite", name=name, tests=str(len(verdicts) + (overall is not None)),
                       failures=str(sum(v.verdict in ("FAIL", "INCOMPLETE") for v in verdicts) + whole),
                       skipped=str(sum(v.verdict == "SKIP" for v in verdicts)), errors="0",
                       time=f"{_seconds(run):.3f}")
    # Surefire's XSD refuses timestamp and hostname on <testsuite> (Jenkins' allows them): both take
    # them as properties (the hostname is one already)
    props["timestamp"] = str(run.get("started_at") or "")
    listed = ET.SubElement(suite, "properties")
    for key, value in props.items():
        ET.SubElement(listed, "property", name=key, value=value)
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"kvbench.accept.{v.bench.replace('.', '_')}",
                             name=f"{v.rule} [{v.case}]", time="0")
        text = f"measured {v.measured}, threshold {v.threshold}; {v.why}".strip("; ")
        _verdict_properties(listed, case.get("name"), v)
        if v.verdict == "FAIL":
            ET.SubElement(case, "failure", message=text, type="below threshold")
        elif v.verdict == "INCOMPLETE":  # not judged: a CI must not pass it silently
            ET.SubElement(case, "failure", message=text, type="incomplete: measured under contention")
        elif v.verdict == "SKIP":
            ET.SubElement(case, "skipped", message=text)
        ET.SubElement(case, "system-out").text = text
    if overall is not None:
        case = ET.SubElement(suite, "testcase", classname="kvbench.accept", name=f"overall verdict: {overall.word}",
                             time="0")
        if whole:
            ET.SubElement(case, "failure", message=overall.line, type=overall.word.lower())
        ET.SubElement(case, "system-out").text = overall.line
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)
