"""A result above its peak is a measurement bug (issue 29.3): the run's progress line and table, the
`results` table and CSV, and the report all say so, with the one named tolerance. A toy benchmark
whose path has a peak far below any real copy makes every result of it above its peak."""

import numpy as np
import pytest

from kvbench.analyze.runs import run_document
from kvbench.benches import get_bench
from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.describe import describe_params
from kvbench.benches.params import Param
from kvbench.benches.registry import register
from kvbench.errors import IntegrityError
from kvbench.hardware.path import register_segment
from kvbench.hardware.peaks import Peak
from kvbench.measure import Settings, Workload
from kvbench.memory.pattern import pattern_bytes, poison
from kvbench.plan.cases import Case
from kvbench.report import content, render
from kvbench.report.table import results_csv, results_table
from kvbench.run.progress import outcome
from kvbench.run.runner import RunInfo, execute
from kvbench.store import open_store
from kvbench.store.records import result_row

WARNING = "above its peak by more than 2%"


@register_segment("toy_slow_link")
def toy_peak(segment, facts, links):
    return Peak(1e-4, "test data: a link far slower than any host copy"), None  # 100 kB/s


@register
class ToyAbovePeak(Benchmark):
    id = "toy.above"
    description = "a host copy judged against a peak it must exceed (test only)"
    params = {"size": Param("size", "64KiB", "bytes per copy", minimum=8)}

    def path(self, params):
        return [("toy_slow_link",)]

    def prepare(self, params):
        src, dst = pattern_bytes(params["size"], seed=3), np.empty(params["size"], dtype=np.uint8)

        def check():
            if not np.array_equal(dst, src):
                raise IntegrityError("copy differs")

        return Prepared(Workload(params["size"], lambda: np.copyto(dst, src), lambda: poison(dst), check))


@pytest.fixture(autouse=True, scope="module")
def _unregister():
    yield
    from kvbench.benches import registry
    from kvbench.hardware.path import SEGMENTS

    registry._BENCHES.pop("toy.above", None)
    SEGMENTS.pop("toy_slow_link", None)


def text_of(renderable) -> str:
    from rich.console import Console

    console = Console(width=5000, record=True)  # one line per row: the warning unbroken
    console.print(renderable)
    return console.export_text()


def test_the_above_peak_warning_reaches_run_results_and_report(tmp_path, facts):
    store = open_store(f"sqlite:///{tmp_path / 'k.sqlite'}")
    lines = []
    case = Case("toy.above", get_bench("toy.above").canonical_params({}))
    run_id = execute([case], store, facts, Settings(samples=5, min_sample_s=0.001, warmup_s=0), RunInfo(),
                     on_result=lambda r: lines.append(outcome(r)))
    (line,) = lines  # the run's progress line as the case ends
    assert "GB/s ok" in line and WARNING in line and "a measurement bug, not a result" in line
    rows = store.results(run_id)
    assert rows[0]["status"] == "ok" and rows[0]["efficiency"] > 1.02
    assert WARNING in text_of(results_table(rows, describe_params))  # run's table and `results`
    assert WARNING in results_csv([{**r, "run_id": run_id} for r in rows], describe_params)
    doc = run_document(store, run_id)
    assert WARNING in " ".join(doc["results"][0]["warnings"])  # `results --format json`, exports
    built = content.build([doc])
    assert WARNING in render.html(built)  # the report's results table
    assert result_row(doc["results"][0])["warnings"]
    store.dispose()
