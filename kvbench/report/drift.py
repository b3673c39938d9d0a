"""A run's inventory drift (kvbench/analyze/accept/drift.py) as lines of text: `kvbench host drift`, accept, report."""

from __future__ import annotations

from kvbench.analyze.accept.drift import Drift
from kvbench.store.schema import FACTS_FIRST_SEEN


def drift_lines(drift: Drift) -> list[str]:
    """What changed by the run, since the box's first run and since the run before; one line each."""
    head = f"run {drift.run_id}"
    out = []
    if drift.facts_source == FACTS_FIRST_SEEN:
        out.append(f"{head}: its facts are the host's first-seen ones (stored before runs kept their own)")
    if drift.first_run is None:
        out.append(f"{head}: the box's first run with recorded facts: nothing to compare with")
        return out
    for label, against, changes in (("first run", drift.first_run, drift.since_first),
                                    ("previous run", drift.previous_run, drift.since_previous)):
        if not changes:
            out.append(f"{head} against the {label} (run {against}): no change")
            continue
        out.append(f"{head} against the {label} (run {against}): {len(changes)} change(s)")
        out += [f"  {c.text}" for c in changes]
    return out


def drift_summary(drift: Drift | None) -> str | None:
    """One line naming what changed since the box's first run, None when nothing did."""
    if drift is None or not drift.since_first:
        return None
    return f"inventory drift since run {drift.first_run}: " + "; ".join(c.text for c in drift.since_first)
