"""The result of one case, as the runner makes it and the store keeps it.

The JSON contract (DESIGN.md) is produced from stored rows, so `run --json` and
`results --format json` print the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvbench.hardware.peaks import Peak
from kvbench.measure.measurement import Measurement

JSON_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Result:
    bench: str
    params: dict[str, Any]
    case_hash: str
    status: str  # ok | skipped | failed
    reason: str | None = None
    measurement: Measurement | None = None
    peak: Peak | None = None
    peak_reason: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def gbps(self) -> dict[str, float] | None:
        return self.measurement.gbps() if self.measurement else None

    @property
    def efficiency(self) -> float | None:
        if self.measurement is None or self.peak is None:
            return None
        return self.gbps["median"] / self.peak.gbps

    @property
    def warnings(self) -> list[str]:
        out = list(self.measurement.warnings) if self.measurement else []
        if self.metadata.get("warning"):
            out.append(self.metadata["warning"])
        if self.efficiency is not None and self.efficiency > 1.0:
            out.append(f"above 100% of peak ({self.efficiency:.0%}): a measurement bug, not a result")
        return out

    def to_row(self) -> dict[str, Any]:
        """Columns of the `result` table (without run_id)."""
        m = self.measurement
        s = m.summary if m else None
        g = self.gbps or {}
        return {
            "bench": self.bench, "params": self.params, "case_hash": self.case_hash,
            "bytes_per_op": m.bytes_per_op if m else self.metadata.get("bytes_per_op"),
            "loops": m.loops if m else None, "timer": m.timer if m else None,
            **{f"{k}_s": getattr(s, k) if s else None for k in ("median", "p10", "p90", "mean", "stdev", "min", "max")},
            "gbps_median": g.get("median"), "gbps_p10": g.get("p10"), "gbps_p90": g.get("p90"),
            "peak_gbps": self.peak.gbps if self.peak else None,
            "peak_source": self.peak.source if self.peak else self.peak_reason,
            "efficiency": self.efficiency,
            "verified": bool(m and m.verified),
            "status": self.status, "reason": self.reason,
            "warnings": self.warnings,
            "extra": {**self.metadata, **({"overhead_fraction": m.overhead_fraction} if m else {})},
        }


def row_to_json(row: dict[str, Any], samples_s: list[float] | None = None) -> dict[str, Any]:
    """One stored result in the JSON contract: bench, params, bytes, samples, gbps, peak, status…"""
    has_rate = row.get("gbps_median") is not None
    out = {
        "bench": row["bench"],
        "params": row["params"],
        "case": row["case_hash"],
        "bytes": row["bytes_per_op"],
        "samples": len(samples_s) if samples_s is not None else None,
        "gbps": {"median": row["gbps_median"], "p10": row["gbps_p10"], "p90": row["gbps_p90"]} if has_rate else None,
        "seconds": {k: row[f"{k}_s"] for k in ("median", "p10", "p90", "mean", "stdev", "min", "max")} if has_rate else None,
        "peak_gbps": row["peak_gbps"],
        "peak_source": row["peak_source"],
        "efficiency": row["efficiency"],
        "verified": bool(row["verified"]),
        "status": row["status"],
        "reason": row["reason"],
        "warnings": row["warnings"],
        "metadata": row["extra"],
    }
    if samples_s is not None:
        out["samples_s"] = samples_s
    return out


def run_to_json(run: dict[str, Any]) -> dict[str, Any]:
    def iso(value: Any) -> Any:
        return value.isoformat() if hasattr(value, "isoformat") else value

    return {
        "format_version": JSON_FORMAT_VERSION,
        "id": run["id"], "host_id": run["host_id"], "context_id": run["context_id"],
        "started_at": iso(run["started_at"]), "ended_at": iso(run["ended_at"]), "status": run["status"],
        "suite": run["suite"], "suite_hash": run["suite_hash"], "kvbench_version": run["kvbench_version"],
        "git_sha": run["git_sha"], "git_dirty": run["git_dirty"], "reason": run["reason"], "tags": run["tags"],
        "system_state": run["system_state"], "units": "GB/s = 1e9 bytes per second; seconds per operation",
    }
