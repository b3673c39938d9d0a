"""Acceptance rules kept as data (suites/rules/*.toml): their shape, checked where they are read
(names, thresholds, units), and which rule files apply to a host's GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kvbench.errors import BadInput, unknown_name
from kvbench.input_files import read_toml_file, suites_dir

RATE_UNITS = {"MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3}


class Threshold(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: float = Field(gt=0, allow_inf_nan=False)
    unit: str


class Ratio(BaseModel):
    """`of` over `to`, paired on every other parameter. A list in `of` is a contest: the fastest of
    those cases is judged (the best KV strategy). `max` bounds it from above too (two stacks that
    must agree within 3 %: min 0.97, max 1.03)."""

    model_config = ConfigDict(extra="forbid")
    of: dict[str, Any]
    to: dict[str, Any]
    min: float = Field(gt=0, allow_inf_nan=False)
    max: float | None = Field(None, gt=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def ordered(self) -> Ratio:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}")
        return self


class Spread(BaseModel):
    model_config = ConfigDict(extra="forbid")
    over: str  # the parameter that differs, e.g. gpu
    max: float = Field(ge=0, lt=1)  # largest allowed shortfall from the fastest, as a fraction


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    bench: str
    params: dict[str, Any] = {}
    min_fraction_of_peak: float | None = Field(None, gt=0, le=1)
    min: Threshold | None = None
    ratio: Ratio | None = None
    spread: Spread | None = None
    link_at_max: bool | None = None  # the result's link, read under load, at max gen and width
    replay_unchanged: bool | None = None  # no PCIe replay-counter increase during the result
    # with min_fraction_of_peak: only results whose peer_link is this kind are judged (gpu.p2p, every
    # ordered pair; kvbench/analyze/accept/kinds/nvlink.py); the others SKIP, FAIL where the profile expects it
    link: Literal["nvlink"] | None = None
    why: str = ""

    @model_validator(mode="after")
    def one_threshold(self) -> Rule:
        given = [x for x in (self.min_fraction_of_peak, self.min, self.ratio, self.spread, self.link_at_max,
                             self.replay_unchanged) if x is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of min_fraction_of_peak, min, ratio, spread, link_at_max, "
                             "replay_unchanged")
        if self.link is not None and self.min_fraction_of_peak is None:
            raise ValueError(f"link = \"{self.link}\" judges a fraction of the link's peak: give min_fraction_of_peak")
        return self


class RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    match: dict[str, str] = {}  # gpu_name (substring) or pci_device_id; empty: every host
    rule: list[Rule]

    @model_validator(mode="after")
    def unique_ids(self) -> RulesFile:
        seen: set[str] = set()
        for rule in self.rule:
            if rule.id in seen:
                raise ValueError(f"rule id '{rule.id}' is given twice; each rule needs its own")
            seen.add(rule.id)
        return self


def load_rules(path: Path) -> RulesFile:
    _, data = read_toml_file(path, f"rules {path}")
    try:
        # strict: a threshold written as a string ("0.3") is a mistake to name, not a number to guess
        rules = RulesFile.model_validate(data, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = f" key '{'.'.join(map(str, err['loc']))}':" if err["loc"] else ""
        raise BadInput(f"rules {path}:{key} {err['msg'].removeprefix('Value error, ')}") from None
    for rule in rules.rule:
        _check_names(rule, path)
        if rule.ratio is not None:
            _check_ratio_sides(rule, path)
        if rule.min is not None and rule.min.unit not in RATE_UNITS:
            raise BadInput(f"rules {path}: rule '{rule.id}' gives unit '{rule.min.unit}' but {rule.bench} "
                           f"measures a rate: use {', '.join(RATE_UNITS)}")
    return rules


def _check_names(rule: Rule, path: Path) -> None:
    """A rule naming a benchmark or parameter that does not exist would SKIP forever: refused, with
    the closest name, as a suite's would be (a ratio's sides may name another `bench`)."""
    from kvbench.benches.registry import get_bench

    try:
        groups = [(rule.bench, rule.params)]
        for side in (rule.ratio.of, rule.ratio.to) if rule.ratio else ():
            named = side.get("bench", rule.bench)
            groups += [(b, {k: v for k, v in side.items() if k != "bench"})
                       for b in (named if isinstance(named, list) else [named])]
        for bench_id, params in groups:
            known = get_bench(bench_id).params
            for name in params:
                if name not in known:
                    raise unknown_name(f"parameter of {bench_id}", name, known)
    except BadInput as exc:
        raise BadInput(f"rules {path}: rule '{rule.id}': {exc}") from None


def _check_ratio_sides(rule: Rule, path: Path) -> None:
    """A ratio whose `of` lists no case SKIPs forever, and one whose two sides can be the same case
    (same benchmark, and every parameter either side names can take one value on both) is 1 x
    whatever was measured: both refused."""
    from kvbench.benches.describe import canonical_subset

    of, to = dict(rule.ratio.of), dict(rule.ratio.to)
    of_bench, to_bench = of.pop("bench", rule.bench), to.pop("bench", rule.bench)
    for key, value in of.items():
        if isinstance(value, list) and not value:
            raise BadInput(f"rules {path}: rule '{rule.id}': ratio.of gives {key} = [], which names no case; "
                           f"list the contestants, e.g. {key} = [\"a\", \"b\"]")
    if of_bench != to_bench:
        return

    def values(side: dict[str, Any], key: str) -> set[str] | None:  # None: the side does not fix it
        if key not in side:
            return None
        given = side[key] if isinstance(side[key], list) else [side[key]]
        return {repr(canonical_subset(of_bench, {key: v})[key]) for v in given}

    overlap = all(a is None or b is None or a & b for a, b in ((values(of, k), values(to, k)) for k in {*of, *to}))
    if overlap:
        raise BadInput(f"rules {path}: rule '{rule.id}': the ratio's of ({_sides(rule.ratio.of)}) and to "
                       f"({_sides(rule.ratio.to)}) can name the same case, which is 1 x whatever was measured; "
                       "give the two sides different values of one parameter")


def _sides(side: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in side.items()) or "nothing"


def applies(rules: RulesFile, gpus: list[dict[str, Any]]) -> bool:
    if not rules.match:
        return True
    name, device = rules.match.get("gpu_name"), rules.match.get("pci_device_id")
    return any((name and name.lower() in g["name"].lower()) or (device and device == g.get("pci_device_id"))
               for g in gpus)


def rules_for_host(gpus: list[dict[str, Any]], path: Path | None = None) -> list[RulesFile]:
    """The rules file given, or every shipped file whose SKU matches this host (the default always)."""
    if path is not None:
        return [load_rules(path)]
    return [r for r in (load_rules(p) for p in sorted((suites_dir() / "rules").glob("*.toml"))) if applies(r, gpus)]
