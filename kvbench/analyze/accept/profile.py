"""Host profiles: the inventory a server must have (DCGM diag and the Azure health checks fail a node
that lacks what its SKU promises; so does kvbench). A profile is TOML with an `[expect]` table,
every key optional; `kvbench host profile -o node.toml` writes this host's own, a person edits it
or writes one by hand, and `suites/profiles/` ships spec profiles of the SKUs in peaks.toml.

Each expectation is an acceptance rule of its own (`inventory-gpus`, …): PASS, or FAIL with what
was found. Counts of GPUs, NUMA nodes and DRAM channels must match exactly; NICs and NVMe drives
are a floor (a host may carry a management port or a boot drive beyond its SKU's); PCIe gen and
width are a floor for every GPU's link at its max (downtraining under load is `pcie-link-at-max`);
DRAM is total installed GB (1e9 bytes) within ±5 %.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kvbench.errors import BadInput, unknown_name
from kvbench.input_files import read_toml_file, suites_dir

PROFILE_ENV = "KVBENCH_PROFILE"
DRAM_TOLERANCE = 0.05  # DMI totals and MemTotal differ by the firmware's reserve; a missing DIMM is >= 1/16


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gpus: int | None = Field(None, ge=0)
    gpu_model: str | None = Field(None, min_length=1)  # a substring of the NVML name, e.g. "H200"
    pcie_gen: int | None = Field(None, ge=1, le=7)
    pcie_width: int | None = Field(None, ge=1, le=32)
    nics: int | None = Field(None, ge=0)  # physical, link up (at nic_gbps or faster, when given)
    nic_gbps: float | None = Field(None, gt=0, allow_inf_nan=False)  # Gb/s per port, as the driver reports
    nvme: int | None = Field(None, ge=0)
    numa_nodes: int | None = Field(None, ge=1)
    dram_gb: float | None = Field(None, gt=0, allow_inf_nan=False)
    dram_channels: int | None = Field(None, ge=1)
    # every ordered pair of GPUs joined by NVLink (direct or through NVSwitch): judged by the SKU's
    # gpu.p2p rule (`link = "nvlink"`), failing closed (kvbench/analyze/accept/kinds/nvlink.py)
    nvlink: bool | None = None
    # the boards' serial numbers (NVML), as `kvbench host profile` measured them: a GPU swapped or taken out
    # fails `inventory-gpu_serials` naming it (delete the key, or write the profile again, after a repair)
    gpu_serials: list[str] | None = None


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "host profile"
    source: str = ""  # "spec: <datasheet>" or "measured on <host> <date>": where the numbers come from
    expect: Expect = Expect()
    # what this host, a VM, does not give or sets itself: the health checks say "the VM's limit" for these
    # (kvbench/analyze/accept/health.py) instead of INCOMPLETE (XID events refused) or FAIL (persistence off)
    vm_limits: list[Literal["xid_events", "persistence"]] = []

    def expects_gpu(self) -> bool:
        return bool(self.expect.gpus) or self.expect.gpu_model is not None

    def expects_nic(self) -> bool:
        return bool(self.expect.nics)


def gpus_to_match(facts: dict[str, Any] | None, profile: Profile | None) -> list[dict[str, Any]]:
    """The GPUs whose SKU rules apply: those the host recorded, else the model its profile promises
    (a server whose GPUs went missing is judged by its SKU's rules, and skips them visibly)."""
    gpus = (facts or {}).get("gpus") or []
    if not gpus and profile is not None and profile.expect.gpu_model:
        return [{"name": profile.expect.gpu_model}]
    return gpus


def load_profile(path: Path) -> Profile:
    """The profile at `path`; any fault is one line naming the file and the key."""
    _, data = read_toml_file(path, f"profile {path}")
    try:
        loaded = Profile.model_validate(data, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = f" key '{'.'.join(map(str, err['loc']))}':" if err["loc"] else ""
        raise BadInput(f"profile {path}:{key} {err['msg'].removeprefix('Value error, ')}") from None
    if all(value is None for value in loaded.expect.model_dump().values()):  # would switch every inventory rule off
        raise BadInput(f"profile {path} expects nothing (no key under [expect]): it checks nothing; write one with "
                       "kvbench host profile -o FILE, or start from a shipped one (suites/profiles/)")
    return loaded


def shipped_profiles() -> dict[str, Path]:
    """The spec profiles kvbench ships (suites/profiles/), by name."""
    return {p.stem: p for p in sorted((suites_dir() / "profiles").glob("*.toml"))}


def profile_path(given: str | None) -> Path | None:
    """`--profile`, else $KVBENCH_PROFILE, else none: a file, or the name of a shipped profile. An
    empty value or a name that is neither is refused in one line, never ignored."""
    value = given if given is not None else os.environ.get(PROFILE_ENV)
    if value is None:
        return None
    option = "--profile" if given is not None else PROFILE_ENV
    if not value.strip():
        raise BadInput(f"bad {option} '': give a profile TOML file or a shipped profile's name")
    if Path(value).exists() or value.endswith(".toml") or "/" in value:
        return Path(value)  # read_toml_file names a file that is missing or unreadable
    shipped = shipped_profiles()
    if value in shipped:
        return shipped[value]
    raise BadInput(f"bad {option}: {unknown_name('profile', value, shipped, list_all=True)}, and no such file")


def shipped_profile_for(gpus: list[dict[str, Any]]) -> str | None:
    """The shipped profile of a host with these GPUs (NVML's facts): the one whose `gpus` is their count and
    whose `gpu_model` is in every GPU's name (the most specific where several are); None where none is.
    scripts/gpu-check passes it to `accept`, so the GPU it found is judged by its own SKU's inventory."""
    found = []
    for name, path in shipped_profiles().items():
        expect = load_profile(path).expect
        if gpus and expect.gpus == len(gpus) and expect.gpu_model and all(
                expect.gpu_model.lower() in str(g.get("name", "")).lower() for g in gpus):
            found.append((len(expect.gpu_model), name))
    return max(found)[1] if found else None


def physical_nics(facts: dict[str, Any], min_gbps: float | None = None) -> list[dict[str, Any]]:
    """NICs that are hardware (not SR-IOV functions) with a link up (a rate known, not reported down), at
    `min_gbps` or faster."""
    return [n for n in facts.get("nics") or [] if not n.get("virtual") and n.get("rate_gbit") and n.get("state") != "down"
            and (min_gbps is None or n["rate_gbit"] >= min_gbps)]


def dram_bytes(facts: dict[str, Any]) -> int | None:
    """Installed DRAM: the DIMMs' total where DMI was readable, else the NUMA nodes' memory."""
    total = (facts.get("dram") or {}).get("total_bytes")
    if total:
        return int(total)
    nodes = [n.get("memory_bytes") for n in facts.get("numa") or []]
    return sum(nodes) if nodes and all(nodes) else None


def expect_from_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """What a host has, as `[expect]` keys (those it could read): its profile as measured."""
    gpus = facts.get("gpus") or []
    out: dict[str, Any] = {"gpus": len(gpus)}
    names = sorted({g.get("name") for g in gpus if g.get("name")})
    if len(names) == 1:
        out["gpu_model"] = names[0].removeprefix("NVIDIA ")
    if gpus and all(g.get("serial") for g in gpus):
        out["gpu_serials"] = sorted(g["serial"] for g in gpus)
    for key, field in (("pcie_gen", "max_gen"), ("pcie_width", "max_width")):
        values = [(g.get("link") or {}).get(field) for g in gpus]
        if values and all(values):
            out[key] = min(values)
    fastest = max((n["rate_gbit"] for n in physical_nics(facts)), default=None)
    out["nics"] = len(physical_nics(facts, fastest))
    if fastest:
        out["nic_gbps"] = fastest
    out["nvme"] = len(facts.get("nvme") or [])
    if facts.get("numa"):
        out["numa_nodes"] = len(facts["numa"])
    if total := dram_bytes(facts):
        out["dram_gb"] = round(total / 1e9)
    if channels := (facts.get("dram") or {}).get("channels"):
        out["dram_channels"] = channels
    return out


def profile_toml(facts: dict[str, Any], source: str) -> str:
    """A profile file of this host's inventory, to edit: each key with what it means."""
    comments = {"gpus": "GPU count (exact)", "gpu_model": "substring of every GPU's NVML name",
                "pcie_gen": "PCIe generation of every GPU link at its max (at least)",
                "pcie_width": "lanes of every GPU link at its max (at least)",
                "nics": "physical NICs with link up, at nic_gbps or faster (at least)",
                "nic_gbps": "Gb/s of each of those NICs", "nvme": "NVMe controllers (at least)",
                "numa_nodes": "NUMA nodes (exact)", "dram_gb": "installed DRAM in GB (1e9 bytes), within ±5 %",
                "dram_channels": "populated memory channels (exact)",
                "gpu_serials": "the GPU boards' serial numbers (every one present, no other)"}
    lines = ["# kvbench host profile: the inventory this server must have (kvbench accept --profile FILE).",
             "# Every key under [expect] is optional: delete what you do not want checked.",
             f'name = "{facts.get("hostname") or "host"}"', f"source = {_toml_string(source)}", "", "[expect]"]
    for key, value in expect_from_facts(facts).items():
        text = (_toml_string(value) if isinstance(value, str) else f"{value:g}" if isinstance(value, float)
                else "[" + ", ".join(_toml_string(v) for v in value) + "]" if isinstance(value, list) else str(value))
        lines.append(f"{key} = {text}  # {comments[key]}")
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
