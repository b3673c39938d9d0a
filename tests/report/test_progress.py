"""The run's progress lines (kvbench/run/progress.py)."""

from __future__ import annotations


def test_the_progress_count_never_passes_its_total_when_unplanned_pairs_are_recorded():
    """A rank recording a dead rank's pairs printed `[4/3]`."""
    import io

    from rich.console import Console

    from kvbench.run.progress import RunProgress

    class Case:
        bench, params = "net.write", {}

    buffer = io.StringIO()
    with RunProgress(Console(file=buffer, width=200), 1, lambda b, p: "") as shown:
        shown.start(0, Case())
        shown.grow()
        shown.start(1, Case())
    assert "[2/2] start" in buffer.getvalue() and "/1]" not in buffer.getvalue().split("[1/1] start")[-1]
