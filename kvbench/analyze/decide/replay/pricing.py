"""What each tier's hits cost on this host, and what a miss costs to recompute.

A tier's restore is the legs its bytes cross into the GPU (or, with `into="dram"`, into the host
DRAM a GPU-less box can gather into), each priced `fragments × α + bytes / β`:

- `hbm`: used in place (the GPU's own prefix cache): no transfer, 0 s.
- `dram`: DRAM → GPU: the α + bytes/β fit of this host's `kv.restore` block-size sweep of the
  model (DRAM → GPU), else its best `pcie.h2d` rate, else PCIe Gen5 x16's spec figure. With
  `into="dram"`: the `kv.restore` DRAM → DRAM fit (the gather this box executes).
  Of the stored sweeps, the fit over what a replayed restore moves is preferred (`gather_match`:
  page_first → layer_first, then consecutive slots): its price is what `kv.replay` is held against.
- `nvme`: file → DRAM (`storage.read`, else the Gen5 NVMe class spec) then the DRAM leg.
- `remote`: remote → DRAM (`net.read`, else ConnectX-7's spec) then the DRAM leg.

Write-backs (demotion into a tier) are priced the same way on the link into that tier: GPU → DRAM
(`kv.offload` fit, `pcie.d2h`, spec), DRAM → file (`storage.write`, spec), DRAM → remote
(`net.write`, spec). A price from a spec figure says `spec` and names its source; a measured one names
the result ids it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvbench.analyze.decide.fit import fit_results
from kvbench.analyze.decide.restore_plan import is_model, latest_per_case, tier_of
from kvbench.errors import BadInput
from kvbench.hardware.peaks import nic_spec, pcie_peak, peak_data
from kvbench.kv.geometry import ModelGeometry
from kvbench.kv.strategies import is_ceiling

TIER_NAMES = ("hbm", "dram", "nvme", "remote")
BENCHES = ("kv.restore", "kv.offload", "pcie.h2d", "pcie.d2h", "storage.read", "storage.write", "net.read",
           "net.write")
SPEC_PCIE = (5, 16)  # the GPU link assumed where this host measured none: PCIe Gen5 x16
SPEC_NIC = "ConnectX-7"  # the remote pool's NIC assumed where none was measured
# what a replayed restore moves (kv.replay, kvbench/benches/kv/replay.py): engine blocks of a page_first pool
# gathered into a layer_first destination, a prefix's blocks in consecutive pool slots
REPLAY_GATHER = {"src_layout": "page_first", "dst_layout": "layer_first", "selection": "sequential"}


@dataclass(frozen=True)
class Leg:
    """One link a tier's bytes cross, priced `fragments × α + bytes / β`."""

    link: str  # e.g. "DRAM → GPU"
    alpha_us: float
    gbps: float
    kind: str  # measured | spec
    source: str
    result_ids: tuple[int, ...] = ()

    def seconds(self, size_bytes: float, fragments: float) -> float:
        return fragments * self.alpha_us * 1e-6 + size_bytes / (self.gbps * 1e9)


@dataclass(frozen=True)
class TierPrice:
    name: str
    restore: tuple[Leg, ...]  # serial legs into the GPU (none: in place)
    writeback: Leg | None  # the link a block demoted into this tier crosses (none for the first tier's own)

    @property
    def kind(self) -> str:
        legs = self.restore + ((self.writeback,) if self.writeback else ())
        if not legs:
            return "in place"
        return "spec" if any(leg.kind == "spec" for leg in legs) else "measured"


def _ok(rows: list[dict[str, Any]], bench: str) -> list[dict[str, Any]]:
    return [r for r in latest_per_case(rows) if r["bench"] == bench and r["status"] == "ok" and r.get("gbps_median")]


def gather_match(series: dict[str, Any]) -> tuple[bool, bool]:
    """Whether a fit's series moves what a replay's restore moves: the same layouts (page_first pool →
    layer_first destination), and the same slot order (a prefix's blocks in consecutive slots)."""
    layouts = all(series.get(k, v) == v for k, v in REPLAY_GATHER.items() if k != "selection")
    return layouts, layouts and series.get("selection") == REPLAY_GATHER["selection"]


def _kv_fit(rows: list[dict[str, Any]], bench: str, path: str, model: ModelGeometry) -> Leg | None:
    """The α + bytes/β fit of `bench` rows of `model` along `path`: of the series that move what a replay
    restore moves (`gather_match`: the layouts first, then the slot order), the one of the most points,
    newest. A fit of another layout or order prices only where none matches, and says so."""
    chosen = [r for r in _ok(rows, bench) if tier_of(r["params"]) == path and is_model(r["params"], model.name)
              and not is_ceiling(r["params"].get("strategy"))]
    best = None
    for series, fit in fit_results(chosen):
        if fit is None or fit.beta_gbps is None:
            continue
        members = [r for r in chosen if all(r["params"].get(k) == v for k, v in series.items()
                                            if k not in ("bench", "run"))
                   and ("run" not in series or r.get("run_id") == series["run"])]
        key = (gather_match(series), fit.points, max(r["id"] for r in members))
        if best is None or key > best[0]:
            best = (key, fit, members, series)
    if best is None:
        return None
    _, fit, members, series = best
    run_ids = sorted({r.get("run_id") for r in members})
    layouts, order = gather_match(series)
    unlike = ("" if order else
              f"; {series.get('selection', 'another')} slots, not the replay's consecutive ones" if layouts else
              f"; {series.get('src_layout')} → {series.get('dst_layout')}, not the replay's page_first → layer_first")
    return Leg(path, float(fit.alpha_us), float(fit.beta_gbps), "measured",
               f"{bench} α + bytes/β fit of {model.name} ({fit.points} block sizes, R² {fit.r2:.3f}"
               f"{', a poor fit' if fit.poor else ''}, run "
               f"{', '.join(map(str, run_ids))}{unlike})", tuple(sorted(r["id"] for r in members)))


def _best_rate(rows: list[dict[str, Any]], bench: str, path: str, keep: Callable[[dict], bool] = lambda p: True
               ) -> Leg | None:
    """The best median rate of `bench` (bandwidth only, α = 0)."""
    chosen = [r for r in _ok(rows, bench) if keep(r["params"])]
    if not chosen:
        return None
    best = max(chosen, key=lambda r: r["gbps_median"])
    return Leg(path, 0.0, float(best["gbps_median"]), "measured",
               f"{bench} best median (result {best['id']}, run {best.get('run_id')}); no per-fragment cost measured",
               (best["id"],))


def _spec_pcie(path: str) -> Leg:
    peak = pcie_peak(*SPEC_PCIE)
    return Leg(path, 0.0, peak.gbps, "spec", f"spec, no measurement on this host: {peak.source}")


def _spec_nvme(path: str, operation: str) -> Leg:
    entry = peak_data()["nvme" if operation == "read" else "nvme_write"]["gen5"]
    return Leg(path, 0.0, float(entry["gbps"]), "spec", f"spec, no measurement on this host: {entry['source']}")


def _spec_nic(path: str) -> Leg:
    entry = nic_spec(SPEC_NIC)
    return Leg(path, 0.0, float(entry["total_gbps"]), "spec", f"spec, no measurement on this host: {entry['source']}")


def _dram_leg(rows: list[dict[str, Any]], model: ModelGeometry, into: str) -> Leg:
    if into == "dram":
        leg = _kv_fit(rows, "kv.restore", "DRAM → DRAM", model) or _best_rate(
            rows, "kv.restore", "DRAM → DRAM", lambda p: tier_of(p) == "DRAM → DRAM" and is_model(p, model.name))
        if leg is None:
            raise BadInput(f"no kv.restore DRAM → DRAM results of {model.name} on this host to price the gather "
                           "with; run 'kvbench run --suite replay' first")
        return leg
    return (_kv_fit(rows, "kv.restore", "DRAM → GPU", model) or _best_rate(rows, "pcie.h2d", "DRAM → GPU")
            or _spec_pcie("DRAM → GPU"))


def tier_prices(names: list[str], rows: list[dict[str, Any]], model: ModelGeometry, into: str = "gpu"
                ) -> list[TierPrice]:
    """Each tier's restore legs and write-back link from this host's stored `rows` (of BENCHES)."""
    dram = _dram_leg(rows, model, into)
    prices = []
    for name in names:
        if name == "hbm":
            restore: tuple[Leg, ...] = ()
            back = None
        elif name == "dram":
            restore = (dram,)
            back = (_kv_fit(rows, "kv.offload", "GPU → DRAM", model) or _best_rate(rows, "pcie.d2h", "GPU → DRAM")
                    or _spec_pcie("GPU → DRAM"))
        elif name == "nvme":
            restore = ((_best_rate(rows, "storage.read", "file → DRAM") or _spec_nvme("file → DRAM", "read")), dram)
            back = _best_rate(rows, "storage.write", "DRAM → file") or _spec_nvme("DRAM → file", "write")
        else:
            restore = ((_best_rate(rows, "net.read", "remote → DRAM") or _spec_nic("remote → DRAM")), dram)
            back = _best_rate(rows, "net.write", "DRAM → remote") or _spec_nic("DRAM → remote")
        prices.append(TierPrice(name, restore, back))
    return prices


def block_bytes(model: ModelGeometry, dtype: str, tp: int, trace_block_tokens: int) -> int:
    """KV bytes of one hash block on one GPU (a windowed layer holds at most its window's tokens)."""
    return model.kv_bytes(trace_block_tokens, dtype, tp)


def fragments(model: ModelGeometry, tokens: Any, engine_block_tokens: int) -> Any:
    """Fragments a restore of `tokens` gathers in the paged layout: one per engine block, layer and tensor."""
    return -(-tokens // engine_block_tokens) * model.layers * model.tensors_per_layer()
