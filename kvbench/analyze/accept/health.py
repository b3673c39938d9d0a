"""GPU health counters as acceptance rules, DCGM-class: what NVML said about each GPU around the timed
part of every GPU case (the result's `contention.gpus` record, kvbench/hardware/nvml_watch.py), judged
against the thresholds in suites/rules/health/gpu.toml (or `accept --health FILE`).

Each check reads one number per GPU per case (`COUNTERS`): XID errors raised, volatile uncorrected ECC
errors, a row remap pending or failed, NVLink CRC / replay / recovery errors, throttle reasons that
slowed the clocks (of the check's `reasons`, read as the window ends) and the share of the timed window
the clocks were held down for heat (`max_held_fraction`: a slowdown that cleared before the end counts),
persistence mode off. PASS when every GPU of every case that recorded it stays at or below `max`; FAIL
naming the GPU and the case; SKIP with the reason when no case recorded it: where GPU cases ran but NVML
did not give it, the verdict is INCOMPLETE on a host that should have GPUs; where no GPU case ran, the GPU
rules that did not run carry that. A case whose GPU reading failed (`reading_failed`) leaves every check
not judged for it: INCOMPLETE, never a pass over the cases that happened to read.

Not applicable (SKIP that leaves nothing incomplete), each said in the verdict: NVLink errors where every
watched GPU has no active NVLink (`nvlink_active` 0, a fact); XID events NVML refuses to deliver, and
persistence mode off or unreadable, where the host profile lists them among the VM's limits
(`vm_limits = ["xid_events", "persistence"]`: the lender's settings, not the GPU's faults). Without that
line the same readings stay INCOMPLETE (unread) or FAIL (persistence off).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kvbench.analyze.accept.judge import Verdict
from kvbench.analyze.runs import RunDocument
from kvbench.errors import BadInput, unknown_name
from kvbench.input_files import read_toml_file, suites_dir
from kvbench.metadata import CONTENTION

HEALTH_ENV = "KVBENCH_HEALTH"  # a thresholds file instead of the shipped one (as --health)


def _xid(gpu: dict[str, Any], _check: Check) -> float | None:
    return len(gpu["xids"]) if "xids" in gpu else None


def _delta(key: str) -> Callable[[dict[str, Any], Check], float | None]:
    return lambda gpu, _check: gpu.get(key)


def _row_remap(gpu: dict[str, Any], _check: Check) -> float | None:
    if "row_remap_pending" not in gpu:
        return None
    return int(bool(gpu["row_remap_pending"])) + int(bool(gpu.get("row_remap_failed")))


def _nvlink(gpu: dict[str, Any], _check: Check) -> float | None:
    found = [gpu[k] for k in ("nvlink_crc_flit_delta", "nvlink_crc_data_delta", "nvlink_replay_delta",
                              "nvlink_recovery_delta") if k in gpu]
    return sum(found) if found else None


def _throttle(gpu: dict[str, Any], check: Check) -> float | None:
    """Slowing reasons read as the window ended, plus 1 where the clocks were held down for heat over more
    than `max_held_fraction` of the window (NVML's violation time: a slowdown that cleared still counts)."""
    reasons, held = gpu.get("throttle_reasons"), gpu.get("thermal_held_fraction")
    if reasons is None and held is None:
        return None
    slowed = len([r for r in reasons or [] if r in check.reasons])
    return slowed + int(held is not None and check.max_held_fraction is not None and held > check.max_held_fraction)


def _persistence_off(gpu: dict[str, Any], _check: Check) -> float | None:
    return None if "persistence" not in gpu else int(not gpu["persistence"])


# counter → (how to read it from a GPU's record, its unit, what a value above max says)
COUNTERS: dict[str, tuple[Callable[[dict[str, Any], Check], float | None], str]] = {
    "xid": (_xid, "XID errors"),
    "ecc_uncorrected": (_delta("ecc_uncorrected_delta"), "uncorrected ECC errors"),
    "row_remap": (_row_remap, "row remaps pending or failed"),
    "nvlink_errors": (_nvlink, "NVLink errors"),
    "throttle": (_throttle, "slowing throttle reasons"),
    "persistence_off": (_persistence_off, "GPUs not in persistence mode"),
}


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    counter: str
    max: float = Field(ge=0, allow_inf_nan=False)
    reasons: list[str] = []  # throttle: the reasons that count
    max_held_fraction: float | None = Field(None, ge=0, le=1)  # throttle: of the window, held down for heat
    why: str = ""


class HealthFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "GPU health counters"
    check: list[Check] = []


def default_health_path() -> Path:
    return suites_dir() / "rules" / "health" / "gpu.toml"


def health_path(given: str | None) -> Path | None:
    """`--health`, else $KVBENCH_HEALTH, else None (the shipped thresholds); an empty value is refused."""
    import os

    value = given if given is not None else os.environ.get(HEALTH_ENV)
    if value is not None and not value.strip():
        raise BadInput(f"bad {'--health' if given is not None else HEALTH_ENV} '': give a health thresholds TOML file")
    return Path(value) if value is not None else None


def load_health(path: Path | None = None) -> HealthFile:
    """The thresholds file (default: the shipped one); any fault is one line naming the file and key."""
    path = path or default_health_path()
    _, data = read_toml_file(path, f"health thresholds {path}")
    try:
        loaded = HealthFile.model_validate(data, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = f" key '{'.'.join(map(str, err['loc']))}':" if err["loc"] else ""
        raise BadInput(f"health thresholds {path}:{key} {err['msg'].removeprefix('Value error, ')}") from None
    if not loaded.check:  # a file that checks nothing would switch every health rule off without a word
        raise BadInput(f"health thresholds {path} has no [[check]]: it checks nothing; give at least one check "
                       "(the shipped suites/rules/health/gpu.toml lists them)")
    seen: set[str] = set()
    for check in loaded.check:
        if check.id in seen:
            raise BadInput(f"health thresholds {path}: check id '{check.id}' given twice: give each check its own id")
        seen.add(check.id)
        if check.counter not in COUNTERS:
            raise BadInput(f"health thresholds {path}: check '{check.id}': "
                           f"{unknown_name('counter', check.counter, COUNTERS, list_all=True)}")
    return loaded


def _gpu_records(doc: RunDocument) -> list[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(result, bus id, the GPU's record) for every GPU every ok or failed case watched."""
    out = []
    for r in doc["results"]:
        gpus = ((r.get("metadata") or {}).get(CONTENTION) or {}).get("gpus") or {}
        out += [(r, bus, gpu) for bus, gpu in gpus.items()]
    return out


def _unread(doc: RunDocument) -> list[tuple[dict[str, Any], str]]:
    """(result, what failed) for every case whose GPU reading failed (an NVML error around its window)."""
    out = []
    for r in doc["results"]:
        failed = ((r.get("metadata") or {}).get(CONTENTION) or {}).get("reading_failed") or []
        out += [(r, text) for text in failed if text.startswith("GPUs")]
    return out


# a counter a VM may not give, or may set otherwise than a bare-metal server: the profile's `vm_limits` name
VM_LIMIT = {"xid": "xid_events", "persistence_off": "persistence"}


def judge_health(doc: RunDocument, health: HealthFile, vm_limits: tuple[str, ...] | list[str] = (),
                 profile_name: str = "") -> list[Verdict]:
    """One verdict per check of `health` over every GPU case of the run; `vm_limits`: the readings the host
    profile (`profile_name`) says its VM does not give or sets itself."""
    records, unread = _gpu_records(doc), _unread(doc)
    out = []
    for check in health.check:
        read, unit = COUNTERS[check.counter]
        threshold = f"≤ {check.max:g} {unit} per GPU per case"
        if check.max_held_fraction is not None:
            threshold += f" (held down for heat ≤ {check.max_held_fraction:.0%} of a window)"
        seen = [(r, bus, value) for r, bus, gpu in records if (value := read(gpu, check)) is not None]
        # silent counters of GPU cases that ran leave a GPU host's acceptance INCOMPLETE; with no GPU case
        # the GPU rules that did not run say so themselves
        head = dict(rule=check.id, bench="gpu", needs=("gpu",) if records or unread else (), unit=unit,
                    limit_max=check.max)
        limit = VM_LIMIT.get(check.counter)
        vm = limit is not None and limit in vm_limits
        vm_said = f"the VM's limit: profile '{profile_name}' lists '{limit}' among its vm_limits"

        def skip(why: str, applicable: bool = True, head: dict[str, Any] = head, threshold: str = threshold) -> Verdict:
            return Verdict(**{**head, **({} if applicable else {"needs": ()})}, case="all GPU cases",
                           verdict="SKIP", measured="-", threshold=threshold, why=why)

        if check.counter == "nvlink_errors" and records and all(g.get("nvlink_active") == 0 for _r, _b, g in records):
            gpus = len({b for _r, b, _g in records})
            out.append(skip(f"not applicable: no active NVLink on the {gpus} watched GPU(s) (NVML: 0 active links)",
                            applicable=False))
            continue
        if not seen:
            cases = len({id(r) for r, _bus, _gpu in records})
            refused = sorted({b for _r, b, g in records if g.get("xid_events") is False})
            why = ("no GPU case ran" if not records and not unread else
                   f"the GPU reading failed in {len(unread)} case(s): {unread[0][1]}" if not records else
                   f"NVML refused XID events on GPU(s) {', '.join(refused)}" if check.counter == "xid" and refused else
                   f"NVML gave no {unit} for {len(records)} GPU reading(s) over {cases} case(s)")
            out.append(skip(f"not applicable, {vm_said} ({why})", applicable=False) if vm and records
                       else skip(f"not judged: {why}"))
            continue
        over = [(r, bus, value) for r, bus, value in seen if value > check.max]
        worst = max(value for _r, _b, value in seen)
        if over and vm:
            shown = ", ".join(sorted({bus for _r, bus, _v in over}))
            out.append(skip(f"not applicable, {vm_said}: GPU(s) {shown} {check.counter.replace('_', ' ')} "
                            "(recorded, the lender's setting, not the GPU's fault)", applicable=False))
            continue
        if over:
            def what(r: dict[str, Any], bus: str, value: float, check: Check = check) -> str:
                return f"GPU {bus} in {_case_text(r)}: " + (
                    _slowed(r, bus, check) if check.counter == "throttle" else f"{value:g}")

            shown = "; ".join(what(*item) for item in over[:4]) + (f"; {len(over) - 4} more" if len(over) > 4 else "")
            out.append(Verdict(**head, case="all GPU cases", verdict="FAIL", measured=shown, threshold=threshold,
                               why=check.why, value=worst,
                               cases=tuple(dict.fromkeys(r["case"] for r, _b, _v in over if r.get("case")))))
        elif unread:
            out.append(skip(f"not judged: the GPU reading failed in {len(unread)} case(s) ({unread[0][1]}); "
                            f"{len(seen)} reading(s) of the others within the limit"))
        else:
            out.append(Verdict(**head, case="all GPU cases", verdict="PASS",
                               measured=f"{worst:g} {unit} at most, {len({b for _r, b, _v in seen})} GPU(s), "
                                        f"{len({id(r) for r, _b, _v in seen})} case(s)",
                               threshold=threshold, why=check.why, value=worst))
    return out


def _slowed(result: dict[str, Any], bus: str, check: Check) -> str:
    """What slowed a GPU in a case: the reasons read as its window ended, and the share held down for heat."""
    gpu = (((result.get("metadata") or {}).get(CONTENTION) or {}).get("gpus") or {}).get(bus) or {}
    parts = [x for x in gpu.get("throttle_reasons") or [] if x in check.reasons]
    held = gpu.get("thermal_held_fraction")
    if held is not None and check.max_held_fraction is not None and held > check.max_held_fraction:
        parts.append(f"held down for heat {held:.0%} of the window")
    return ", ".join(parts)


def _case_text(result: dict[str, Any]) -> str:
    """A case in words: its benchmark and parameters (the health window of `accept --level 1` is no benchmark)."""
    from kvbench.benches.describe import describe_params, params_of

    if params_of(result["bench"]) is None:
        return f"{result['bench']} {' '.join(f'{k}={v}' for k, v in result['params'].items())}".strip()
    return f"{result['bench']} {describe_params(result['bench'], result['params'])}"
