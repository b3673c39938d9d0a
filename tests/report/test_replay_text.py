"""`kvbench replay`'s sweep in the terminal: each capacity's three hit ratios and TTFT (seconds from a
second up), the knee marked on its row, and the title saying where 90 % of unbounded is reached or that
it is not within the sweep."""

from rich.console import Console

from kvbench.report.replay_text import sweep_table


def text(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def doc(knee, reach):
    points = [{"capacity_bytes": c, "capacity_blocks": c // 10**8, "hit_ratio": h, "token_hit_ratio": h,
               "request_hit_ratio": h, "ttft_s": {"p50": 0.25, "p99": 8.37}}
              for c, h in ((10**10, 0.05), (10**11, 0.2), (10**12, 0.26))]
    return {"sweep": {"tier": "dram", "points": points, "unbounded_hit_ratio": 0.289, "knee_bytes": knee,
                      "reaches_90pct_of_unbounded_bytes": reach}}


def test_the_sweep_marks_its_knee_and_where_90_percent_is_reached():
    out = text(sweep_table(doc(10**11, 9 * 10**11)))
    title = " ".join(out.split())
    assert "knee 100 GB" in title and "reached at 900 GB" in title and "unbounded 28.9 %" in title
    row = next(line for line in out.splitlines() if "100 GB" in line and "knee" in line and "│" in line)
    assert "20.0 %" in row and "250 ms" in row and "8.37 s" in row


def test_a_sweep_that_stops_short_says_so():
    out = " ".join(text(sweep_table(doc(None, None))).split())  # the title wraps at the table's width
    assert "knee not within the sweep" in out and "90 % of unbounded not reached within the sweep" in out
    assert sweep_table({"sweep": None}) is None
