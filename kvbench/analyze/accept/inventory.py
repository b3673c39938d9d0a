"""A host profile's expectations judged against the host facts a run recorded when it began (its own,
store schema version 4; a run stored earlier carries its host's first-seen facts, and its verdicts say
so): one acceptance verdict per `[expect]` key (rule `inventory-<key>`), PASS, or FAIL with what was
found; SKIP where the run recorded no such fact (which makes the overall verdict INCOMPLETE, never PASS,
whatever else passed: verdict.py). Every key is judged here whatever rule file is in use:
`nvlink` from the links the run's gpu.p2p cases recorded (a SKU rule file's NVLink rule judges their
rates besides). Each verdict carries its numbers too (`value`, `limit`, `limit_max` in `unit`), and
names what changed on that fact since the box's first run (kvbench/analyze/accept/drift.py) where it changed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kvbench.analyze.accept.drift import Drift
from kvbench.analyze.accept.judge import Verdict
from kvbench.analyze.accept.profile import DRAM_TOLERANCE, Profile, dram_bytes, physical_nics
from kvbench.store.schema import FACTS_FIRST_SEEN

INVENTORY = "profile"  # what an inventory verdict needs: a profile that asks for it


# the drift keys (kvbench/analyze/accept/drift.py) a profile key's verdict names when they changed
DRIFT_KEYS = {"pcie_width": ("pcie_gen",), "nic_gbps": ("nics",), "gpus": ("gpus",), "gpu_model": ("gpu_model",),
              "gpu_serials": ("gpu_serials", "gpus")}


def _verdict(key: str, ok: bool | None, found: str, threshold: str, why: str = "", *, value: float | None = None,
             unit: str = "", limit: float | None = None, limit_max: float | None = None) -> Verdict:
    word = "SKIP" if ok is None else "PASS" if ok else "FAIL"
    return Verdict(rule=f"inventory-{key}", bench="host", case="inventory", verdict=word, measured=found,
                   threshold=threshold, why=why or ("as the profile expects" if ok else "not what the profile expects"),
                   needs=(INVENTORY,), value=value, unit=unit, limit=limit, limit_max=limit_max)


def _gpus(want: int, facts: dict[str, Any]) -> Verdict:
    gpus = facts.get("gpus") or []
    names = ", ".join(sorted({g.get("name") or "?" for g in gpus}))
    found = f"{len(gpus)} GPU(s)" + (f": {names}" if names else f" ({facts.get('gpu_reason') or 'none found'})")
    return _verdict("gpus", len(gpus) == want, found, f"= {want}", value=len(gpus), unit="GPUs", limit=want,
                    limit_max=want)


def _gpu_model(want: str, facts: dict[str, Any]) -> Verdict:
    gpus = facts.get("gpus") or []
    other = sorted({g.get("name") or "?" for g in gpus if want.lower() not in (g.get("name") or "").lower()})
    found = ", ".join(sorted({g.get("name") or "?" for g in gpus})) or f"no GPU ({facts.get('gpu_reason') or 'none found'})"
    return _verdict("gpu_model", bool(gpus) and not other, found, f"every GPU's name contains '{want}'")


def _link(key: str, field: str, want: int, facts: dict[str, Any]) -> Verdict:
    gpus = facts.get("gpus") or []
    values = {g.get("bus_id") or str(g.get("index")): (g.get("link") or {}).get(field) for g in gpus}
    label = "Gen" if field == "max_gen" else "x"
    if not gpus:
        return _verdict(key, False, f"no GPU link ({facts.get('gpu_reason') or 'no GPU found'})", f"≥ {label}{want}")
    if any(v is None for v in values.values()):
        unknown = ", ".join(bus for bus, v in values.items() if v is None)
        return _verdict(key, None, "unknown", f"≥ {label}{want}", f"link {field} unreadable for GPU {unknown}")
    low = {bus: v for bus, v in values.items() if v < want}
    found = ", ".join(f"{bus} {label}{v}" for bus, v in (low or values).items())
    return _verdict(key, not low, found, f"≥ {label}{want} at max, every GPU", value=min(values.values()),
                    unit="PCIe generation" if field == "max_gen" else "lanes", limit=want)


def _serials(want: list[str], facts: dict[str, Any]) -> Verdict:
    gpus = facts.get("gpus") or []
    have = {g.get("serial"): g for g in gpus}
    threshold = f"{len(want)} board(s) as profiled"
    if gpus and None in have:
        return _verdict("gpu_serials", None, "unknown", threshold, "NVML gives no serial for every GPU")
    missing, new = sorted(set(want) - set(have)), sorted(set(have) - set(want))
    found = "; ".join(filter(None, [f"missing {', '.join(missing)}" if missing else "",
                                    "new " + ", ".join(f"{s} (GPU {have[s].get('index')} {have[s].get('bus_id')})"
                                                       for s in new) if new else ""])) or f"{len(have)} as profiled"
    return _verdict("gpu_serials", not missing and not new, found, threshold, value=len(set(want) & set(have)),
                    unit="boards as profiled", limit=len(want), limit_max=len(want))


def _nics(want: int, facts: dict[str, Any], gbps: float | None, key: str = "nics") -> Verdict:
    found = physical_nics(facts, gbps)
    names = ", ".join(f"{n['name']} {n['rate_gbit']:g} Gb/s" for n in found)
    at = f" at ≥ {gbps:g} Gb/s" if gbps else ""
    return _verdict(key, len(found) >= want, f"{len(found)} up{at}" + (f": {names}" if names else ""),
                    f"≥ {want} physical, link up{at}", value=len(found), unit="NICs up", limit=want)


def _count(key: str, want: int, have: int | None, unit: str, exact: bool, why_unknown: str = "") -> Verdict:
    if have is None:
        return _verdict(key, None, "unknown", f"{'=' if exact else '≥'} {want}", why_unknown)
    return _verdict(key, have == want if exact else have >= want, f"{have} {unit}", f"{'=' if exact else '≥'} {want}",
                    value=have, unit=unit, limit=want, limit_max=want if exact else None)


def _dram(want: float, facts: dict[str, Any]) -> Verdict:
    total = dram_bytes(facts)
    threshold = f"{want:g} GB ± {DRAM_TOLERANCE:.0%}"
    if total is None:
        return _verdict("dram_gb", None, "unknown", threshold, "neither DMI nor the NUMA nodes gave a total")
    return _verdict("dram_gb", abs(total / 1e9 - want) <= DRAM_TOLERANCE * want, f"{total / 1e9:.0f} GB", threshold,
                    value=total / 1e9, unit="GB", limit=want * (1 - DRAM_TOLERANCE),
                    limit_max=want * (1 + DRAM_TOLERANCE))


def _nvlink(facts: dict[str, Any], results: list[dict[str, Any]], want_gpus: int | None) -> Verdict:
    """Every ordered pair of the host's GPUs joined by NVLink, as the run's gpu.p2p cases recorded the
    pair's link (NVML, kvbench/hardware/nvlink.py): FAIL on a pair of another kind or fewer than two
    GPUs, SKIP where no case recorded a pair's link (not judged: INCOMPLETE)."""
    threshold = "NVLink between every ordered pair of GPUs"
    gpus = len(facts.get("gpus") or [])
    if gpus < 2:
        found = f"{gpus} GPU(s)" + ("" if gpus else f" ({facts.get('gpu_reason') or 'none found'})")
        return _verdict("nvlink", False, found + ": no pair to join", threshold)
    links: dict[str, dict[str, Any]] = {}
    for r in results:
        link = (r.get("metadata") or {}).get("peer_link")
        if r.get("bench") == "gpu.p2p" and link and r.get("params", {}).get("pair"):
            links.setdefault(str(r["params"]["pair"]), link)
    other = {pair: link for pair, link in links.items() if link.get("kind") not in ("nvlink", "unknown")}
    if other:
        named = ", ".join(f"{pair} {link.get('kind')}" for pair, link in sorted(other.items()))
        return _verdict("nvlink", False, f"pair(s) without NVLink: {named}", threshold)
    count = max(gpus, want_gpus or 0)
    pairs = [f"{a}-{b}" for a in range(count) for b in range(count) if a != b]
    unread = [p for p in pairs if (links.get(p) or {}).get("kind") != "nvlink"]
    if unread:
        shown = ", ".join(unread[:8]) + (f", … ({len(unread)} in all)" if len(unread) > 8 else "")
        return _verdict("nvlink", None, "unknown", threshold,
                        f"the run recorded no NVLink reading for pair(s) {shown} (run gpu.p2p on every pair)")
    return _verdict("nvlink", True, f"NVLink on all {len(pairs)} ordered pairs", threshold)


def _with_drift(verdict: Verdict, key: str, drift: Drift | None, facts_source: str | None) -> Verdict:
    """The verdict's why, naming what changed on its fact since the box's first run, and facts that are
    the host's first-seen ones (a run stored before runs kept their own)."""
    notes = []
    if drift is not None:
        changes = [c for k in DRIFT_KEYS.get(key, (key,)) for c in drift.changed(k)]
        if changes:
            notes.append(f"changed since run {drift.first_run}: " + "; ".join(c.text for c in changes))
    if facts_source == FACTS_FIRST_SEEN:
        notes.append("judged on the host's first-seen facts: this run predates facts kept per run")
    return replace(verdict, why="; ".join([verdict.why, *notes])) if notes else verdict


def inventory_verdicts(profile: Profile, facts: dict[str, Any] | None, results: list[dict[str, Any]] | None = None,
                       drift: Drift | None = None, facts_source: str | None = None) -> list[Verdict]:
    """One verdict per expectation the profile gives, against `facts` (the host facts a run recorded) and,
    for what only a case can read (NVLink between GPUs), the run's `results`; `drift` (the run's changes
    since the box's first run) is named in the verdicts it bears on."""
    e = profile.expect
    checks: list[tuple[str, Any, Callable[[dict[str, Any]], Verdict]]] = [
        ("gpus", e.gpus, lambda f: _gpus(e.gpus, f)),
        ("gpu_model", e.gpu_model, lambda f: _gpu_model(e.gpu_model, f)),
        ("gpu_serials", e.gpu_serials, lambda f: _serials(e.gpu_serials, f)),
        ("pcie_gen", e.pcie_gen, lambda f: _link("pcie_gen", "max_gen", e.pcie_gen, f)),
        ("pcie_width", e.pcie_width, lambda f: _link("pcie_width", "max_width", e.pcie_width, f)),
        ("nics", e.nics, lambda f: _nics(e.nics, f, e.nic_gbps)),
        ("nvme", e.nvme, lambda f: _count("nvme", e.nvme, len(f.get("nvme") or []), "NVMe", exact=False)),
        ("numa_nodes", e.numa_nodes, lambda f: _count("numa_nodes", e.numa_nodes, len(f.get("numa") or []) or None,
                                                      "node(s)", exact=True, why_unknown="no NUMA nodes recorded")),
        ("dram_gb", e.dram_gb, lambda f: _dram(e.dram_gb, f)),
        ("dram_channels", e.dram_channels, lambda f: _count(
            "dram_channels", e.dram_channels, (f.get("dram") or {}).get("channels"), "channel(s)", exact=True,
            why_unknown=(f.get("dram") or {}).get("reason") or "the DIMMs' locators do not say")),
    ]
    if e.nvlink:  # `nvlink = false` asks for nothing
        checks.append(("nvlink", e.nvlink, lambda f: _nvlink(f, results or [], e.gpus)))
    if e.nic_gbps is not None and e.nics is None:
        checks.append(("nic_gbps", e.nic_gbps, lambda f: _nics(1, f, e.nic_gbps, "nic_gbps")))
    out = []
    for key, wanted, check in checks:
        if wanted is None:
            continue
        verdict = check(facts) if facts else _verdict(key, None, "-", "", "the run recorded no host facts")
        out.append(_with_drift(verdict, key, drift, facts_source))
    return out
