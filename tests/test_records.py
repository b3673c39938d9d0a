"""The typed run and result records, their JSON documents, and the checks on a document given to
kvbench from outside."""

import copy
import json

import pytest

from kvbench.errors import BadInput
from kvbench.store.records import FORMAT_VERSION, ResultRecord, RunRecord, validate_document
from tests.conftest import FIXTURES

QUICK = json.loads((FIXTURES / "runs" / "quick-cpu-vm.json").read_text())


def test_a_version_1_export_migrates_to_the_current_version():
    assert QUICK["run"]["format_version"] == 1 and "format_version" not in QUICK
    doc = validate_document(QUICK, "quick")
    assert doc["format_version"] == FORMAT_VERSION and "format_version" not in doc["run"]
    assert len(doc["results"]) == len(QUICK["results"])
    assert doc["results"][0]["samples_s"] == QUICK["results"][0]["samples_s"]


def test_a_stored_row_and_its_json_are_one_record():
    row = {"bench": "dram.copy", "params": {"size": 4096}, "case_hash": "c", "status": "ok", "bytes_per_op": 4096,
           "gbps_median": 2.0, "gbps_p10": 1.0, "gbps_p90": 3.0, **{f"{k}_s": 1e-6 for k in
                                                                   ("median", "p10", "p90", "mean", "stdev", "min", "max")},
           "verified": True, "warnings": ["noisy"], "extra": {"primitive": "memcpy"}}
    record = ResultRecord.from_row(row, [1e-6] * 5)
    again = ResultRecord.from_json(record.to_json())
    assert again == record and record.gbps == {"median": 2.0, "p10": 1.0, "p90": 3.0}
    run = RunRecord(id=1, host_id="h", context_id="c", status="complete", tags={"a": "b"})
    assert RunRecord.from_json(run.to_json()) == run


@pytest.mark.parametrize("breakage,message", [
    (lambda d: d.pop("results"), "is not a kvbench run export"),
    (lambda d: d["run"].update(format_version=7), "format version 7"),
    (lambda d: d["run"].pop("host_id"), "run lacks 'host_id'"),
    (lambda d: d["run"].update(status="paused"), "status 'paused'"),
    (lambda d: d["results"][2].pop("status"), "result 2 lacks 'status'"),
    (lambda d: d["results"][0].update(params="size=1"), "'params' has the wrong type"),
    (lambda d: d["results"][0]["gbps"].pop("p90"), "result 0.gbps lacks 'p90'"),
    (lambda d: d["results"][0].update(samples_s=[1.0, -2.0]), "samples_s must be a list of positive seconds"),
    (lambda d: d["results"][0].update(samples_s=[]), "an ok result with no samples"),
    (lambda d: d["results"][0].update(bytes=-5), "bytes must be a positive integer"),
    (lambda d: d["run"].update(started_at="yesterday"), "started_at 'yesterday' is not an ISO 8601 time"),
    (lambda d: d["run"].update(started_at="2026-11-30T10:00:00+00:00", ended_at="2026-11-30T09:00:00+00:00"),
     "is before started_at"),
    # hostile trial H8: "no" read as verified; H9: impossible numbers shown as measured
    (lambda d: d["results"][0].update(verified="no"), "'verified' has the wrong type \\(str\\): true or false"),
    (lambda d: d["results"][0].update(verified=1), "'verified' has the wrong type \\(int\\)"),
    (lambda d: d["results"][0]["gbps"].update(median=-5.0), "gbps.median -5.0 is no rate"),
    (lambda d: d["results"][0]["gbps"].update(p90=1e308), "gbps.p90 1e\\+308 is no rate"),
    (lambda d: d["results"][0]["gbps"].update(p10=True), "gbps.p10 True is no rate"),
    (lambda d: d["results"][0].update(peak_gbps=-1), "peak_gbps -1 is no rate"),
    (lambda d: d["results"][0].update(seconds={"median": -1e-3}), "seconds.median -0.001 is no duration"),
    (lambda d: d["results"][0].update(efficiency=-0.5), "efficiency -0.5 is no fraction"),
    (lambda d: d["results"][0].update(samples=0), "samples 0 is no count of samples \\(an ok result has at least 1\\)"),
])
def test_a_malformed_document_is_refused_with_one_line_naming_the_fault(breakage, message):
    doc = copy.deepcopy(QUICK)
    breakage(doc)
    with pytest.raises(BadInput, match=message):
        validate_document(doc, "export file 'x.json'")
