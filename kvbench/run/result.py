"""The result of one case, as the runner makes it and the store keeps it.

The JSON contract (DESIGN.md) is produced from stored rows (kvbench/store/records.py), so `run --json`
and `results --format json` print the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvbench.hardware.peaks import Peak, above_peak, above_peak_warning
from kvbench.measure.measurement import Measurement
from kvbench.store.records import STATS, Status


@dataclass(frozen=True)
class Result:
    bench: str
    params: dict[str, Any]
    case_hash: str
    status: Status
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
        if above_peak(self.efficiency):
            out.append(above_peak_warning(self.efficiency, self.peak.source if self.peak else None))
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
            **{f"{k}_s": getattr(s, k) if s else None for k in STATS},
            "gbps_median": g.get("median"), "gbps_p10": g.get("p10"), "gbps_p90": g.get("p90"),
            "peak_gbps": self.peak.gbps if self.peak else None,
            "peak_source": self.peak.source if self.peak else self.peak_reason,
            "efficiency": self.efficiency,
            "verified": bool(m and m.verified),
            "status": self.status, "reason": self.reason,
            "warnings": self.warnings,
            # what the engine measured besides the samples: the precision reached, a paired ratio
            "extra": {**self.metadata, **({"overhead_fraction": m.overhead_fraction, **m.record()} if m else {})},
        }
