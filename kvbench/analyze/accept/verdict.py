"""One overall verdict for an acceptance: PASS, FAIL or INCOMPLETE (kvbench/overall.py).

FAIL where any rule failed. INCOMPLETE where nothing failed but a rule that should apply here was
not judged — its cases cross hardware (a GPU, a NIC) that the host profile promises, or, without a
profile, that the host's own inventory shows (a GPU seen by NVML or on the PCI bus) — or where
nothing at all was judged, or a rule failed only on cases measured under contention (accept measured
them once more first; kvbench/analyze/regress/contended.py). A GPU server whose driver broke therefore never
passes on skips, and a busy neighbour never fails a box.
Every reason for INCOMPLETE is one function in `INCOMPLETE_WHEN`: adding one is one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kvbench.analyze.accept.inventory import INVENTORY
from kvbench.analyze.accept.judge import NO_CASE, Verdict
from kvbench.analyze.accept.profile import Profile
from kvbench.analyze.accept.uncertain import is_uncertain
from kvbench.benches.describe import describe_params
from kvbench.overall import INCOMPLETE, Overall, decide

LABEL = {"gpu": "GPU", "multi-gpu": "multi-GPU", "nic": "network", INVENTORY: "inventory"}


def pci_gpus(facts: dict[str, Any]) -> list[str]:
    """NVIDIA display/3D controllers on the PCI bus (sysfs): GPUs even where NVML cannot see them."""
    return [d["bdf"] for d in facts.get("pci") or []
            if str(d.get("vendor")).lower() == "0x10de" and str(d.get("pci_class")).startswith("0x03")]


def expected_here(facts: dict[str, Any] | None, profile: Profile | None) -> dict[str, str]:
    """What this host should be able to judge (need → why it is expected): from the profile when one
    is given, else from the host's own inventory; without either, nothing beyond the host rules."""
    if profile is not None:
        e, name = profile.expect, f"profile '{profile.name}'"
        out = {}  # its inventory rules' SKIPs: _profile_key_not_judged, whatever `expected` says
        if profile.expects_gpu():
            out["gpu"] = f"{name} expects {e.gpus if e.gpus is not None else 'a'} {e.gpu_model or ''} GPU(s)".replace("  ", " ")
        if (e.gpus or 0) >= 2:
            out["multi-gpu"] = f"{name} expects {e.gpus} GPUs"
        if profile.expects_nic():
            out["nic"] = f"{name} expects {e.nics} NIC(s)"
        return out
    facts = facts or {}
    nvml, bus = facts.get("gpus") or [], pci_gpus(facts)
    out = {}
    if nvml:
        out["gpu"] = f"NVML sees {len(nvml)} GPU(s)"
    elif bus:
        out["gpu"] = (f"the PCI bus shows {len(bus)} NVIDIA GPU(s) ({', '.join(bus)}) that NVML cannot read: "
                      f"{facts.get('gpu_reason') or 'no reason recorded'}")
    if max(len(nvml), len(bus)) >= 2:
        out["multi-gpu"] = f"this host has {max(len(nvml), len(bus))} GPUs"
    return out


def _nothing_judged(verdicts: list[Verdict], expected: dict[str, str]) -> list[str]:
    if any(v.verdict in ("PASS", "FAIL", INCOMPLETE) for v in verdicts):  # INCOMPLETE: judged, on a busy box
        return []
    return ["nothing was judged: " + ("every rule was skipped" if verdicts else "no rule applies")]


def _expected_but_skipped(verdicts: list[Verdict], expected: dict[str, str]) -> list[str]:
    out = []
    for need, why in expected.items():
        by_reason: dict[str, list[str]] = {}  # rules skipped for one reason are named together
        for v in verdicts:
            if v.verdict == "SKIP" and need in v.needs and need != INVENTORY and v.rule not in sum(by_reason.values(), []):
                by_reason.setdefault(v.why, []).append(v.rule)
        if by_reason:
            listed = "; ".join(f"{', '.join(rules)} ({reason})" for reason, rules in by_reason.items())
            count = sum(len(rules) for rules in by_reason.values())
            out.append(f"{count} {LABEL.get(need, need)} rule(s) not judged although {why}: {listed}")
    return out


def _profile_key_not_judged(verdicts: list[Verdict], expected: dict[str, str]) -> list[str]:
    """A profile's `[expect]` key the run recorded no fact for (an `inventory-*` SKIP): the profile
    promised it, so it is not judged whatever else passed (whether or not `expected` says so)."""
    skipped = [v for v in verdicts if v.verdict == "SKIP" and (INVENTORY in v.needs or v.rule.startswith("inventory-"))]
    rules = list(dict.fromkeys(v.rule for v in skipped))
    if not rules:
        return []
    listed = "; ".join(f"{v.rule} ({v.why})" for v in skipped)
    return [f"{len(rules)} profile expectation(s) not judged, the run recorded no such fact: {listed}"]


def _failed_only_while_contended(verdicts: list[Verdict], expected: dict[str, str]) -> list[str]:
    """Rules that failed only on cases measured under contention (kvbench/analyze/regress/contended.py)."""
    busy = [v for v in verdicts if v.verdict == INCOMPLETE and not is_uncertain(v)]
    rules = list(dict.fromkeys(v.rule for v in busy))
    if not rules:
        return []
    count = len(busy)
    return [f"{count} case(s) of {', '.join(rules)} failed only while the box was contended: re-measure on a quiet box"]


def _host_rule_without_its_case(verdicts: list[Verdict], expected: dict[str, str]) -> list[str]:
    """Rules that need no GPU or NIC (any host can judge them) skipped only because the run judged
    has no case for them (`accept --run` on a run of another suite): not judged, so not a pass
    (hostile trial H14: "PASS …; 10 skipped, not expected on this host" hid two DRAM rules)."""
    rules = list(dict.fromkeys(v.rule for v in verdicts if v.verdict == "SKIP" and not v.needs and v.why == NO_CASE))
    if not rules:
        return []
    return [f"{len(rules)} host rule(s) not judged: the run has no case for them ({', '.join(rules)}); "
            "run the acceptance suite"]


def _uncertain(verdicts: list[Verdict], expected: dict[str, str]) -> list[str]:
    """Ratios whose 95 % interval straddles their threshold, even after re-sampling (kvbench/analyze/accept/uncertain.py)."""
    found = [v for v in verdicts if is_uncertain(v)]
    if not found:
        return []
    shown = "; ".join(f"{v.rule} {v.measured} against {v.threshold}" for v in found)
    why = ("the 95 % interval straddles the threshold" if all(v.low is not None for v in found) else
           "too few pairs to bound the ratio" if all(v.low is None for v in found) else
           "the 95 % interval straddles the threshold, or too few pairs bound the ratio")
    return [f"{len(found)} case(s) uncertain: {why} ({shown})"]


# Each: (verdicts, expected) → reasons the acceptance is INCOMPLETE (none: it is not, for that reason).
INCOMPLETE_WHEN: list[Callable[[list[Verdict], dict[str, str]], list[str]]] = [
    _nothing_judged, _expected_but_skipped, _profile_key_not_judged, _host_rule_without_its_case,
    _failed_only_while_contended, _uncertain]


WHOLE_RUN = ("complete", "failed")  # ended by itself with every case (a failed run: some of them failed)
NAMED = 3  # failed cases named in the last line; the rest counted


def run_failed_cases(run: dict[str, Any]) -> list[str]:
    """The judged run's failed cases, in words: each fails the acceptance, whether or not a rule
    covers it (a failed net.write beside one passing rule is no PASS)."""
    failed = [r for r in run.get("results") or [] if r.get("status") == "failed"]
    if not failed:
        return []
    named = [f"{r['bench']} {describe_params(r['bench'], r.get('params') or {})} "
             f"({r.get('reason') or 'no reason recorded'})" for r in failed[:NAMED]]
    more = f", and {len(failed) - NAMED} more" if len(failed) > NAMED else ""
    return [f"run {run['run'].get('id')}: {len(failed)} case(s) failed: {', '.join(named)}{more}"]


def run_not_whole(run: dict[str, Any]) -> list[str]:
    """Why the judged run is not whole (aborted, crashed, still running, short of its cases): what it
    holds is judged, but it is no acceptance of the box ([] for a whole run)."""
    info = run.get("run") or {}
    status, partial = info.get("status"), info.get("partial")
    if status in WHOLE_RUN and not partial:
        return []
    reason = info.get("reason")
    why = partial or (f"{status} ({reason})" if reason else status)
    return [f"run {info.get('id')} is not whole, only its cases so far were judged: {why}"]


def accept_overall(verdicts: list[Verdict], expected: dict[str, str], failed_cases: str | None = None,
                   runs: Sequence[dict[str, Any]] = ()) -> Overall:
    """The acceptance's one word and why. `runs`: the run documents judged, however it was reached (run
    here, by id, `latest`, an export): any failed case of it fails the acceptance, named, even where no
    rule covers it, and a run that is not whole (aborted, crashed, running) is INCOMPLETE at best, its
    status said. `failed_cases`: a failure said another way (a run's own line)."""
    failed = [v for v in verdicts if v.verdict == "FAIL"]
    fails = []
    if failed:
        rules = list(dict.fromkeys(v.rule for v in failed))
        fails.append(f"{len(failed)} case(s) failed {len(rules)} acceptance rule(s): {', '.join(rules)}")
    if failed_cases:
        fails.append(failed_cases)
    incomplete = []
    for run in runs:
        fails += run_failed_cases(run)
        incomplete += run_not_whole(run)
    incomplete += [reason for when in INCOMPLETE_WHEN for reason in when(verdicts, expected)]
    passed = len({v.rule for v in verdicts if v.verdict == "PASS"})
    skipped = len({v.rule for v in verdicts if v.verdict == "SKIP"})
    summary = [f"{passed} rule(s) passed" + (f"; {skipped} skipped, not expected on this host" if skipped else "")]
    return decide(fails, incomplete, summary)
