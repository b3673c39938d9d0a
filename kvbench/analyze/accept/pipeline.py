"""The one way a run's acceptance verdicts are made, so that every output of a CI job says the same word
(`accept`'s table, JSON and JUnit, and `report`'s first heading): the rules judged on the run, a failure
measured on a contended box made INCOMPLETE, a ratio whose interval straddles its threshold named
uncertain, the GPU health counters, NVLink failing closed where the profile promises it, and the host
profile's inventory judged on the run's own facts (with the drift that bears on each)."""

from __future__ import annotations

from kvbench.analyze.accept.drift import Drift
from kvbench.analyze.accept.health import HealthFile, judge_health
from kvbench.analyze.accept.inventory import inventory_verdicts
from kvbench.analyze.accept.judge import RulesFile, Verdict, judge
from kvbench.analyze.accept.kinds.nvlink import fail_closed
from kvbench.analyze.accept.profile import Profile
from kvbench.analyze.accept.uncertain import name_uncertain
from kvbench.analyze.regress.contended import incomplete_on_contention
from kvbench.analyze.runs import RunDocument


def acceptance_verdicts(doc: RunDocument, rules: list[RulesFile], profile: Profile | None, health: HealthFile,
                        drift: Drift | None = None, resampled_in: int | None = None,
                        judged: list[Verdict] | None = None) -> list[Verdict]:
    """Every verdict of the acceptance of `doc`; `judged`: the rules' verdicts when the caller judged
    them already (after measuring cases again), `resampled_in`: the run that re-sampled uncertain cases."""
    verdicts = judge(doc, rules) if judged is None else judged
    verdicts = incomplete_on_contention(verdicts, doc)
    verdicts = name_uncertain(verdicts, doc, resampled_in) + judge_health(
        doc, health, profile.vm_limits if profile else (), profile.name if profile else "")
    verdicts = fail_closed(verdicts, profile, rules)
    if profile is not None:
        host = doc.get("host") or {}
        verdicts = inventory_verdicts(profile, host.get("facts"), doc["results"], drift=drift,
                                      facts_source=host.get("facts_source")) + verdicts
    return verdicts
