"""The kinds of acceptance rule, registered once: each says which rules it judges (from the fields
a rule sets in its TOML) and judges them on a run. The first kind that claims a rule judges it; a
rule none of the special kinds claims is a rate rule (`min_fraction_of_peak` or `min`). A new kind
is a module here with a `judge_*` function and one line in KINDS."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kvbench.analyze.case_verdict import Verdict
from kvbench.analyze.accept.kinds.nvlink import judge_link
from kvbench.analyze.accept.kinds.rate import judge_rate
from kvbench.analyze.accept.kinds.ratio import judge_ratio
from kvbench.analyze.accept.kinds.recorded import judge_recorded
from kvbench.analyze.accept.kinds.spread import judge_spread
from kvbench.analyze.accept.rules import Rule
from kvbench.analyze.runs import RunDocument


@dataclass(frozen=True)
class RuleKind:
    name: str
    claims: Callable[[Rule], bool]
    judge: Callable[[Rule, RunDocument], list[Verdict]]


KINDS: tuple[RuleKind, ...] = (
    RuleKind("ratio", lambda rule: rule.ratio is not None, judge_ratio),
    RuleKind("spread", lambda rule: rule.spread is not None, judge_spread),
    RuleKind("recorded", lambda rule: bool(rule.link_at_max or rule.replay_unchanged), judge_recorded),
    RuleKind("link", lambda rule: bool(rule.link), judge_link),
    RuleKind("rate", lambda rule: True, judge_rate),
)


def kind_of(rule: Rule) -> RuleKind:
    """The kind that judges `rule`: the first in KINDS that claims it."""
    return next(kind for kind in KINDS if kind.claims(rule))
