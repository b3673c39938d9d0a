"""Issue 57 item 10: one case, one run, one allowance function — every output (compare, the report, the
github-action-benchmark export, history, the --repeat table) states the allowance `noise.case_allowance`
gives, naming the base it is against; a baseline too noisy to catch a halving says so. Synthetic runs."""

import json

from rich.console import Console

from kvbench.analyze.regress.noise import case_allowance
from kvbench.store import open_store
from tests.inproc import run_in_process as cli
from tests.one_case_runs import store_one_case_runs

HOST, CTX, CASE = "test-box-i57-10", "e" * 64, "00112233aabbccdd"
ENV = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400"}


def _outputs(db: str, tmp_path, base: str, new: str, repeat_ids: list[int]) -> dict[str, str]:
    from kvbench.cli.run import show_repeats

    console = Console(record=True, width=400)
    show_repeats(open_store(db, read_only=True), repeat_ids, console)
    (c,) = json.loads(cli("compare", base, new, "--db", db, "--format", "json", env=ENV).stdout)["comparisons"]
    md = tmp_path / "r.md"
    cli("report", new, "--baseline", base, "--format", "markdown", "-o", str(md), "--db", db, env=ENV)
    export = json.loads(cli("export", new, "--format", "github-action-benchmark", "--db", db, env=ENV).stdout)
    return {"repeat table": console.export_text(), "compare": c["note"], "compare json": c["allowance"],
            "report": md.read_text(), "export": export[0]["extra"],
            "history": cli("history", "dram.copy", "--db", db, env=ENV).stdout}


def test_every_output_names_the_base_its_allowance_is_against(tmp_path):
    # the --repeat table said −35.9 %, compare and the report −25.8 %, the export and history −29.6 %,
    # none saying against what
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    repeat = [10.0, 10.6, 9.8]
    tags = [{"baseline": "1", "repeat": f"{i}/3"} for i in (1, 2, 3)]
    ids = store_one_case_runs(db, HOST, CTX, CASE, "quick", [(g, t, {}) for g, t in zip(repeat, tags)]
                              + [(9.9, {}, {})])
    fast = [g * 1.002 for g in repeat]
    pooled, single = case_allowance(fast, 0.05, 3).words, case_allowance(fast, 0.05, 1).words
    assert "against the median of 3 base runs" in pooled and "against one base run" in single
    printed = _outputs(db, tmp_path, "baseline", "latest", ids[:3])
    for where in ("repeat table", "compare", "compare json", "report"):
        assert pooled in printed[where], (where, printed[where])
    for where in ("export", "history"):  # a dashboard and history weigh each run against the one before
        assert single in printed[where], (where, printed[where])


def test_a_baseline_too_noisy_to_catch_a_halving_says_so_everywhere(tmp_path):
    # a 3-run range of 103 %: no allowance can gate a halving, and every output says so
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    ids = store_one_case_runs(db, HOST, CTX, CASE, "quick", [(g, {}, {}) for g in (10.0, 20.3, 12.0, 11.0)])
    printed = _outputs(db, tmp_path, "3", "4", ids[:3])
    for where, text in printed.items():
        assert "baseline too noisy to gate: re-take it on a quiet box" in text, (where, text)
