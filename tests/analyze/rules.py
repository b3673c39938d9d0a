"""Acceptance rules as the tests write them (TOML text, one `[[rule]]` table a call), and the stored real
run they are judged on (tests/fixtures/runs/quick-cpu-vm.json)."""

from __future__ import annotations

import json
from pathlib import Path

from kvbench.analyze.accept.judge import load_rules

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"
ONE_THREAD = '{ size = "256MiB", threads = 1, fragment = 0 }'  # the stored run's one-thread contiguous dram.copy


def quick_run() -> dict:
    """The quick suite's stored run on a 2-CPU VM, read afresh: tests change their copy."""
    return json.loads((RUNS / "quick-cpu-vm.json").read_text())


def rate(value: float, unit: str = "GB/s") -> str:
    """An absolute threshold (`min = ...`) as TOML text."""
    return f'{{ value = {value}, unit = "{unit}" }}'


def kv_ratio(min_ratio: float, of: str = '"host"') -> str:
    """kv.restore's fragmented strategy `of` (TOML text) against the contiguous copy, at least `min_ratio`."""
    return f'{{ of = {{ strategy = {of} }}, to = {{ strategy = "contiguous" }}, min = {min_ratio} }}'


def rule(rule_id: str, bench: str, **keys: str | float | bool) -> str:
    """One `[[rule]]` table; each keyword is a key and its value: TOML text for a table or a string
    (`params=ONE_THREAD`, `min=rate(1)`), else a number or a bool."""
    lines = ["[[rule]]", f'id = "{rule_id}"', f'bench = "{bench}"']
    for key, value in keys.items():
        lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
    return "\n".join(lines) + "\n"


def rules_file(folder: Path, *tables: str) -> Path:
    """`folder`/rules.toml, a rules set named "t" holding `tables`."""
    path = folder / "rules.toml"
    path.write_text('name = "t"\n' + "".join(tables))
    return path


def load(folder: Path, *tables: str):
    """The rules set of `tables`, written to `folder` and loaded as accept loads a user's file."""
    return load_rules(rules_file(folder, *tables))
