"""The one overall verdict every judging command ends in (DESIGN.md, Verdicts): PASS, FAIL or
INCOMPLETE, with the exit status a CI acts on — 0 PASS, 1 FAIL, 3 INCOMPLETE (2 stays bad input).

INCOMPLETE means nothing failed but something that should have been judged was not: a verdict
never passes on silence. Each command says *why* in `reasons`, one short clause each, so its last
line reads `INCOMPLETE: 9 GPU rule(s) not judged: ...`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvbench.errors import CheckFailed

PASS, FAIL, INCOMPLETE = "PASS", "FAIL", "INCOMPLETE"
# a check with no goal (crosscheck net) cannot fail, so it never says PASS: it shows its figure, exit 0
# only where both sides ran (a side that could not run is INCOMPLETE)
SHOWN = "SHOWN"
EXIT_STATUS = {PASS: 0, FAIL: 1, INCOMPLETE: 3, SHOWN: 0}


@dataclass(frozen=True)
class Overall:
    word: str  # PASS | FAIL | INCOMPLETE
    reasons: tuple[str, ...] = ()  # why, one clause each: what failed, or what was not judged

    @property
    def line(self) -> str:
        """The command's last line: the word first, then why."""
        return f"{self.word}: {'; '.join(self.reasons)}" if self.reasons else self.word

    def exit_status(self, allow_incomplete: bool = False) -> int:
        """0, 1 or 3; `allow_incomplete` makes INCOMPLETE 0 for those who accept it (never FAIL)."""
        return 0 if self.word == INCOMPLETE and allow_incomplete else EXIT_STATUS[self.word]

    def to_json(self) -> dict:
        return {"verdict": self.word, "reasons": list(self.reasons), "exit_status": self.exit_status()}


def decide(failed: Sequence[str], incomplete: Sequence[str], passed: Sequence[str] = ()) -> Overall:
    """FAIL where anything failed (the incomplete reasons said too), else INCOMPLETE where anything
    was not judged that should have been, else PASS (with what passed, when given)."""
    if failed:
        return Overall(FAIL, (*failed, *incomplete))
    if incomplete:
        return Overall(INCOMPLETE, tuple(incomplete))
    return Overall(PASS, tuple(passed))


class Concluded(CheckFailed):
    """A command that ends on a FAIL or INCOMPLETE verdict: the CLI prints `overall.line` as its last
    line and exits with its status (1 or 3)."""

    def __init__(self, overall: Overall) -> None:
        super().__init__("; ".join(overall.reasons) or overall.word)
        self.overall = overall
        self.exit_code = overall.exit_status()


def run_overall(statuses: Sequence[str], failed: int, label: str) -> Overall:
    """A run's verdict from its cases' statuses (`failed`: failed cases over all its repeats): FAIL
    where a case failed (an integrity failure above all), INCOMPLETE where nothing was measured
    (every case skipped: a GPU suite on a host whose driver broke), else PASS — every case that
    could run here ran ok."""
    ok = sum(s == "ok" for s in statuses)
    if failed:
        return Overall(FAIL, (f"{label}: {failed} case(s) failed",))
    if not ok:
        return Overall(INCOMPLETE, (f"{label} measured nothing: " + (
            f"all {len(statuses)} case(s) skipped" if statuses else "no case"),))
    return Overall(PASS, (f"{label}: {ok} case(s) ok",))


def combine(parts: Sequence[Overall]) -> Overall:
    """One verdict of several (a crosscheck's sizes or directions): FAIL if any failed, else
    INCOMPLETE if any was not judged, else PASS where any part was judged and passed, else SHOWN (every
    part only shown: no goal to pass); every part's reasons kept."""
    by = {word: [r for p in parts if p.word == word for r in p.reasons] for word in (PASS, FAIL, INCOMPLETE, SHOWN)}
    if not parts:
        return Overall(INCOMPLETE, ("nothing was judged",))
    if not by[FAIL] and not by[INCOMPLETE] and all(p.word == SHOWN for p in parts):
        return Overall(SHOWN, tuple(by[SHOWN]))
    return decide(by[FAIL], by[INCOMPLETE], by[PASS] + by[SHOWN])
