"""A stored run judged against the user's own peaks (`--peaks FILE` / KVBENCH_PEAKS): every command that
judges against a peak (accept, report, plan, compare's efficiency column) takes each ok result's peak
again, on the facts the run was measured on, where the user's file gives it; the peak a run stored
otherwise stands. Which file was used is recorded in the document (`peaks_file`)."""

from __future__ import annotations

import os
from typing import Any

from kvbench.analyze.runs import RunDocument
from kvbench.benches.registry import find_bench
from kvbench.hardware.facts import host_facts_from_dict
from kvbench.hardware.path import links_under_load, path_peak
from kvbench.hardware.peaks import PEAKS_ENV, USER_PEAKS_LABEL

PEAKS_FILE = "peaks_file"  # the document key naming the peaks file its peaks were taken from


def peaks_file() -> str | None:
    """The user's peaks file in force for this process (use_peaks sets it from --peaks), None if none."""
    return os.environ.get(PEAKS_ENV) or None


def _repeaked(result: dict[str, Any], facts) -> dict[str, Any]:
    spec = find_bench(result["bench"])
    if spec is None or result.get("status") != "ok" or not (result.get("gbps") or {}).get("median"):
        return result
    try:
        found = path_peak(spec.path(result["params"]), facts,
                          links_under_load(result["params"], result.get("metadata") or {}))
    except Exception:  # noqa: BLE001 — a path that cannot be named keeps the peak it was stored with
        return result
    if found.peak is None or USER_PEAKS_LABEL not in found.peak.source:
        return result
    return {**result, "peak_gbps": found.peak.gbps, "peak_source": found.peak.source,
            "efficiency": result["gbps"]["median"] / found.peak.gbps}


def with_user_peaks(doc: RunDocument) -> RunDocument:
    """`doc` with the peaks the user's file gives (none in force: `doc` as it is)."""
    path = peaks_file()
    if path is None:
        return doc
    facts = (doc.get("host") or {}).get("facts")
    if not facts:
        return {**doc, PEAKS_FILE: path}
    host = host_facts_from_dict(facts)
    return {**doc, PEAKS_FILE: path, "results": [_repeaked(r, host) for r in doc["results"]]}
