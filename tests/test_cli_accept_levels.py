"""`accept --level 2|3`: each says its planned cases and budget before it measures and what it took after;
level 3's suite holds every case level 2 judges, and the long sweeps beside them."""

from __future__ import annotations

from kvbench.cli.accept_steps import LEVEL_SUITES, level_budget
from kvbench.plan.cases import plan
from kvbench.plan.suite import load_suite
from tests.inproc import run_in_process as cli


def _cases(suite: str) -> set[str]:
    loaded, path, _text = load_suite(suite)
    return {repr((c.bench, sorted(c.params.items()))) for c in plan(loaded.bench, None, {}, source=str(path))}


def test_level_3_runs_every_level_2_case_and_the_long_sweeps():
    two, three = _cases(LEVEL_SUITES[2]), _cases(LEVEL_SUITES[3])
    assert two < three and len(three) > 2 * len(two)
    (n2, b2), (n3, b3) = level_budget(LEVEL_SUITES[2]), level_budget(LEVEL_SUITES[3])
    assert (n2, n3) == (len(two), len(three)) and b3 > b2 > 0


def test_a_measuring_level_states_its_budget_first_and_its_time_after(tmp_path):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    rules = tmp_path / "rules.toml"
    rules.write_text('name = "floor"\n[[rule]]\nid = "floor"\nbench = "dram.copy"\nmin = { value = 0.001, unit = "GB/s" }\n'
                     'why = "a floor"\n')
    proc = cli("accept", "--level", "3", "--suite", "tests/fixtures/tiny.toml", "--rules", str(rules), "--db", db)
    lines = proc.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("kvbench: level 3: suite tests/fixtures/tiny.toml"))
    last = next(i for i, line in enumerate(lines) if line.startswith("kvbench: level 3 took "))
    assert first < last and "case(s) planned on this host, budget" in lines[first] and "s budget" in lines[last]
