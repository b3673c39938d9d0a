"""A case's parameters for people and for matching: one canonicaliser and one describer, used by
planning, acceptance rules, tables, reports and plots alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvbench.benches.declared import declared_params
from kvbench.benches.params import Param, format_params
from kvbench.benches.registry import all_benches, find_bench, registered
from kvbench.errors import unknown_name

if TYPE_CHECKING:
    from kvbench.benches.base import Benchmark


def params_of(bench_id: str) -> dict[str, Param] | None:
    """The parameters benchmark `bench_id` takes, None if no benchmark is registered under it: those of
    the benchmark registered under it already (a plugin's, even one that replaces a built-in, is what
    `run` measures), else a built-in one's declaration (`declared.py`), so describing stored results does
    not import the benchmarks' measuring modules, else the registry's after it imports them."""
    spec = registered(bench_id)
    if spec is None:
        declared = declared_params(bench_id)
        if declared is not None:
            return declared
        spec = find_bench(bench_id)
    return spec.params if spec else None


def bench_params(bench_id: str) -> dict[str, Param]:
    """`params_of`, refusing an id no benchmark registers (`BadInput` with the closest known id): how a
    command that reads stored results checks the benchmark it was given."""
    specs = params_of(bench_id)
    if specs is None:
        raise unknown_name("benchmark", bench_id, all_benches())
    return specs


def canonical_subset(bench_id: str, params: dict[str, Any], strict: bool = False) -> dict[str, Any]:
    """`params` (some of a benchmark's parameters, as a user or a rule wrote them) parsed to their
    canonical values (`"256MiB"` → 268435456). A name the benchmark does not take is kept as written,
    or refused with the closest known name when `strict`."""
    specs = params_of(bench_id)
    return dict(params) if specs is None else _canonical(bench_id, specs, params, strict)


def canonical_subset_of(bench: Benchmark, params: dict[str, Any], strict: bool = False) -> dict[str, Any]:
    """`canonical_subset` for a benchmark already looked up (planning holds it)."""
    return _canonical(bench.id, bench.params, params, strict)


def _canonical(bench_id: str, specs: dict[str, Param], params: dict[str, Any], strict: bool) -> dict[str, Any]:
    out = {}
    for name, value in params.items():
        if name in specs:
            out[name] = specs[name].parse(name, value)
        elif strict:
            raise unknown_name(f"parameter of {bench_id}", name, specs)
        else:
            out[name] = value
    return out


def with_added_defaults(bench_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` of a stored result with every parameter added since (`Param.added`, as `pages`) that
    it lacks filled in at its default: a result stored before the parameter existed was measured at
    that default, and a rule or report naming it (`pages = "base"`) must find it."""
    specs = params_of(bench_id)
    if specs is None:
        return params
    missing = {name: p.parse(name, p.default) for name, p in specs.items() if p.added and name not in params}
    return {**params, **missing} if missing else params


def older_results_filled(doc: dict[str, Any]) -> dict[str, Any]:
    """A run document whose results carry every parameter added since they were stored, at its default
    (`with_added_defaults`); the results are copies, `doc` is left as it was."""
    return {**doc, "results": [{**r, "params": with_added_defaults(r["bench"], r["params"])} for r in doc["results"]]}


def describe_params(bench_id: str, params: dict[str, Any], skip_defaults: bool = True) -> str:
    """`size=256MiB threads=2`: parameters (those not at their default, unless asked), sizes in binary
    units; `(defaults)` when nothing differs."""
    return format_params(params, params_of(bench_id), skip_defaults=skip_defaults) or "(defaults)"
