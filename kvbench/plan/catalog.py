"""What this kvbench can do, and whether it can here: every benchmark (with its parameters), executor,
memory kind and suite, with the reason where one cannot run — `kvbench list` (and its `--json`)."""

from __future__ import annotations

from typing import Any


def catalog() -> dict[str, Any]:
    from kvbench.benches.registry import all_benches
    from kvbench.executors.registry import all_executors
    from kvbench.memory.kinds import memory_kinds
    from kvbench.plan.suite import load_suite, suite_names

    def suite(name: str) -> dict[str, Any]:
        loaded, _path, _hash = load_suite(name)
        return {"name": name, "description": loaded.description,
                "benchmarks": list(dict.fromkeys(b.id for b in loaded.bench))}

    return {
        "benchmarks": [{"id": bench_id, "description": bench.description,
                        "params": {n: {"default": p.parse(n, p.default), "kind": p.kind, "help": p.help,
                                       **({"choices": list(p.choices)} if p.choices else {})}
                                   for n, p in bench.params.items()},
                        "unavailable": bench.unavailable_reason()} for bench_id, bench in all_benches().items()],
        "executors": [{"name": name, "family": ex.family, "description": ex.description,
                       "unavailable": ex.unavailable_reason()} for name, ex in all_executors().items()],
        "memory_kinds": [{"name": name, "description": kind.description, "unavailable": kind.unavailable_reason()}
                         for name, kind in memory_kinds().items()],
        "suites": [suite(name) for name in suite_names()],
    }
