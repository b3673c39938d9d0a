"""What each rail of a multi-NIC network case carried (net.write / net.read `rails=`).

Two ways to spread a transfer over NICs, and what each lets us know:
- `rails=a,b`: kvbench deals the batch over one NIXL agent per device, so it knows the bytes of each
  operation it gave each rail exactly (`dealt`).
- `rails=N`: UCX spreads every request over up to N lanes itself (UCX_MAX_RMA_RAILS). UCX does not
  report the bytes each lane moved; its protocol table gives the split it planned from the lanes'
  bandwidths (`planned`, "50% on rc_mlx5/mlx5_0:1 and 50% on ..."), or names the one lane it used.
Either way the devices' own counters over the case are recorded beside (hardware/nic_counters.py).
"""

from __future__ import annotations

from typing import Any

from kvbench.backends.ucx_protocols import devices as ucx_devices
from kvbench.backends.ucx_protocols import lane_shares

COUNTER_NOTE = ("bytes each device's kernel counters grew by over the whole case (warm-up, calibration, samples, "
                "checks): headers, retransmissions and any other traffic on the device included")
_NOT_NETWORK = ("memory", "self")  # cma/memory, self/memory: shared memory on one host, no NIC


def _rails_n(params: dict[str, Any]) -> bool:
    return params["rails"].strip().isdigit()


def rail_bytes(params: dict[str, Any], protocols: dict[str, list[str]],
               dealt: list[int]) -> list[dict[str, Any]] | None:
    """Each rail's bytes per operation where known: [{"rail", "bytes_per_op" (or None), "share"
    (fraction, or None), "how"}]; None for a case without `rails=`. `dealt`: bytes of each
    kvbench agent's request, in rail order."""
    if not params["rails"].strip():
        return None
    if not _rails_n(params):
        rails = [r.strip() for r in params["rails"].split(",") if r.strip()]
        total = sum(dealt)
        return [{"rail": rail, "bytes_per_op": n, "share": n / total if total else None,
                 "how": "dealt by kvbench: one agent and request per device"} for rail, n in zip(rails, dealt, strict=True)]
    total = sum(dealt)
    shares = lane_shares(protocols)
    if shares:
        return [{"rail": lane, "bytes_per_op": None, "share": share,
                 "how": "UCX's planned split (its protocol table); UCX does not report the bytes each lane moved"}
                for lane, share in shares.items()]
    lanes = ucx_devices(protocols)
    if len(lanes) == 1:
        return [{"rail": lanes[0], "bytes_per_op": total, "share": 1.0,
                 "how": "UCX's protocol table names this one lane for the whole range"}]
    return [{"rail": lane, "bytes_per_op": None, "share": None,
             "how": "UCX does not report how it split the bytes over these lanes"} for lane in lanes or ["?"]]


def rail_devices(params: dict[str, Any], protocols: dict[str, list[str]]) -> list[str]:
    """The devices whose counters a case with `rails=` reads: those named, else those UCX used."""
    if not params["rails"].strip():
        return []
    named = [r.strip() for r in (params["net_devices"] if _rails_n(params) else params["rails"]).split(",")
             if r.strip()]
    used = [lane.split("/", 1)[1] for lane in ucx_devices(protocols) if "/" in lane]
    return list(dict.fromkeys(named or [d for d in used if d not in _NOT_NETWORK]))
