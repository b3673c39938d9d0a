"""Terminal tables (rich) and CSV for stored results."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

from rich.markup import escape

from kvbench.hardware.peaks import USER_PEAKS_LABEL
from kvbench.metadata import PAIRED, PRECISION
from kvbench.report.fit_table import FittedTable
from kvbench.report.markdown_text import md_text
from kvbench.units import format_gbps

STATUS_STYLE = {"ok": "green", "skipped": "yellow", "failed": "bold red"}


def results_table(rows: list[dict[str, Any]], describe: Callable[[str, dict], str], title: str = "") -> FittedTable:
    """One line per result: median GB/s, p10–p90, the precision reached (± % of the median), peak,
    efficiency, verified, status. The peak's source, a warning (a paired ratio among them) or a reason
    too long for its cell is a numbered footnote below, each text once however many rows share it."""
    cells = []
    for row in rows:
        status = row["status"]
        if status == "ok":
            rate = format_gbps(row["gbps_median"])
            spread = f"{format_gbps(row['gbps_p10'])}–{format_gbps(row['gbps_p90'])}"
            eff = f"{row['efficiency']:.0%}" if row["efficiency"] is not None else "-"
            precise = precision_text(row.get("extra") or {})
            note = "; ".join([*(row.get("warnings") or []), *paired_note(row.get("extra") or {})])
            status_cell = ("[green]ok[/]", escape(note))
        else:
            rate = spread = eff = precise = "-"
            status_cell = (f"[{STATUS_STYLE.get(status, '')}]{status}[/]", escape(row["reason"] or ""))
        source = _short_source(row)
        cells.append([escape(row["bench"]), escape(describe(row["bench"], row["params"])), rate, spread, precise,
                      (format_gbps(row["peak_gbps"]), escape(source) if source != "-" else ""), eff,
                      "yes" if row["verified"] else "no", status_cell])
    return FittedTable(title, RESULT_COLUMNS, cells, optional=("p10–p90 GB/s", "eff.", "median ±"))


# What the results table shows, and how each column gives way to a narrow terminal (report/fit_table.py).
RESULT_COLUMNS = [("benchmark", "id"), ("parameters", "text"), ("median GB/s", "number"), ("p10–p90 GB/s", "number"),
                  ("median ±", "number"), ("peak GB/s", "number"), ("eff.", "number"), ("verified", "id"),
                  ("status", "note")]


def precision_text(extra: dict[str, Any]) -> str:
    """The precision a result reached: half the median's 95 % confidence interval, in % of it ("-"
    where fewer than 6 samples bound none, or an older result recorded none)."""
    reached = (extra.get(PRECISION) or {}).get("reached")
    return "-" if reached is None else f"{reached:.1%}"


def paired_note(extra: dict[str, Any]) -> list[str]:
    """A paired ratio in words: "0.93× strategy=contiguous (paired, p10–p90 0.90–0.95)"."""
    p = extra.get(PAIRED)
    if not p:
        return []
    against = " ".join(f"{k}={v}" for k, v in p["against"].items())
    return [f"{p['median']:.2f}× {against} (paired, p10–p90 {p['p10']:.2f}–{p['p90']:.2f})"]


def status_line(rows: list[dict[str, Any]], most: int = 4) -> str:
    """A run table's closing line: `N ok · N failed · N skipped (reasons: …)`, each distinct skip
    reason once with its count, the commonest first (at most `most`, then how many more)."""
    count = {s: sum(r["status"] == s for r in rows) for s in ("ok", "failed", "skipped")}
    reasons: dict[str, int] = {}
    for r in rows:
        if r["status"] == "skipped":
            reasons[r.get("reason") or "no reason recorded"] = reasons.get(r.get("reason") or "no reason recorded", 0) + 1
    listed = [f"{why}{f' ×{n}' if n > 1 else ''}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1])]
    if len(listed) > most:
        listed = listed[:most] + [f"{len(listed) - most} more"]
    line = f"{count['ok']} ok · {count['failed']} failed · {count['skipped']} skipped"
    return line + (f" (reasons: {'; '.join(listed)})" if listed else "")


def _short_source(row: dict[str, Any]) -> str:
    """The peak source's first clause; a figure from the user's own peaks file keeps that clause too,
    so the table never passes the user's number off as the datasheet's."""
    first, *rest = (row.get("peak_source") or "-").split(";")
    users = [part.strip() for part in rest if part.strip().startswith(USER_PEAKS_LABEL)]
    return f"{first} ({users[0]})" if users and USER_PEAKS_LABEL not in first else first


# One row per result, with its run's identity beside it so a time series needs no join. A figure's column
# is its JSON path with `_` for `.` (JSON `gbps.p10` is CSV `gbps_p10`: one name per figure, issue 57 item
# 16); a rate's 10th percentile is its slow end, a time's its short end (docs/guide.md says so).
CSV_COLUMNS = ["run_id", "started_at", "host_id", "hostname", "suite", "tags", "bench", "params", "case_hash",
               "bytes_per_op", "gbps_median", "gbps_p10", "gbps_p90", "seconds_median", "seconds_p10",
               "seconds_p90", "samples", "precision", "paired_ratio", "peak_gbps", "peak_source", "efficiency",
               "verified", "status", "reason", "warnings"]
_CSV_NAMES = {"median_s": "seconds_median", "p10_s": "seconds_p10", "p90_s": "seconds_p90"}


def utc_iso(when: Any) -> str | None:
    """A stored start time (UTC, written without its zone by older runs) as ISO 8601 with its zone."""
    from datetime import datetime, timezone

    if when is None:
        return None
    try:
        moment = when if isinstance(when, datetime) else datetime.fromisoformat(str(when))
    except ValueError:
        return str(when)
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).isoformat()


def run_csv_fields(run: dict[str, Any], host: dict[str, Any] | None) -> dict[str, Any]:
    """A run's columns of the results CSV: id, start (UTC, ISO 8601), host id and name, suite, tags."""
    facts = (host or {}).get("facts") or {}
    tags = run.get("tags") or {}
    return {"run_id": run["id"], "started_at": utc_iso(run.get("started_at")), "host_id": run.get("host_id"),
            "hostname": (host or {}).get("hostname") or facts.get("hostname"), "suite": run.get("suite"),
            # a JSON object: a value may hold ';' or '=' (a note, a CI job's URL), which k=v;k=v would split
            "tags": json.dumps(dict(sorted(tags.items())), ensure_ascii=False, separators=(",", ":"))}


def results_csv(rows: list[dict[str, Any]], describe: Callable[[str, dict], str]) -> str:
    """One line per result: the columns above (a row carries its run's fields, `run_csv_fields`;
    `params` described, `samples` counted, `warnings`
    joined by '; ', `precision` the half-width reached as a fraction, `paired_ratio` the median of a
    paired ratio), then one `param.NAME` column per parameter any result has, in its canonical
    value (sizes in bytes), empty where a benchmark does not take it."""
    names = sorted({name for row in rows for name in row["params"]})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS + [f"param.{n}" for n in names], extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        samples = row.get("samples")
        writer.writerow({**row, **{new: row.get(old) for old, new in _CSV_NAMES.items()},
                         "params": describe(row["bench"], row["params"]),
                         "samples": len(samples) if isinstance(samples, list) else samples,
                         "warnings": "; ".join(row.get("warnings") or []),
                         "precision": ((row.get("extra") or {}).get(PRECISION) or {}).get("reached"),
                         "paired_ratio": ((row.get("extra") or {}).get(PAIRED) or {}).get("median"),
                         **{f"param.{n}": row["params"][n] for n in names if n in row["params"]}})
    return out.getvalue()


VERDICT_STYLE = {"PASS": "green", "FAIL": "bold red", "SKIP": "yellow", "slower": "bold red", "missing": "bold red",
                 "lost": "bold red", "INCOMPLETE": "bold yellow",
                 "failed": "bold red", "faster": "green", "ambiguous": "yellow", "ambiguous (contended)": "yellow", "too noisy": "yellow",
                 "same": "dim"}


def verdicts_table(verdicts: list, title: str) -> FittedTable:
    """Acceptance verdicts: rule, case, PASS/FAIL/SKIP, measured, threshold, why (a long why is a footnote)."""
    rows = [[escape(v.rule), escape(v.case), _styled(v.verdict), escape(v.measured), escape(v.threshold), escape(v.why)]
            for v in verdicts]
    # the threshold is never left out nor cut (a verdict without its threshold reads as a bare word); a
    # narrow terminal stacks the case under its rule instead
    return FittedTable(title, [("rule", "id"), ("case", "text"), ("verdict", "id"), ("measured", "words"),
                               ("threshold", "words"), ("why", "note")], rows, stack={"case": "rule"})


def _styled(verdict: str) -> str:
    style = VERDICT_STYLE.get(verdict, "")
    return f"[{style}]{escape(verdict)}[/]" if style else escape(verdict)


def _change(c) -> str:
    return f"{c.change:+.1%}" if c.change is not None else "-"


def comparisons_table(comparisons: list, title: str, describe: Callable[[str, dict], str]) -> FittedTable:
    """Each case's base and new rate, the change and the verdict, regressions first; the evidence a
    numbered footnote where it is long."""
    rows = [[escape(c.bench), escape(describe(c.bench, c.params)), format_gbps(c.base_gbps), format_gbps(c.new_gbps),
             _change(c), _styled(c.verdict), escape(c.note or "")]
            for c in sorted(comparisons, key=lambda c: _ORDER.get(c.verdict, 9))]
    return FittedTable(title, [("benchmark", "id"), ("parameters", "text"), ("base GB/s", "number"),
                               ("new GB/s", "number"), ("change", "number"), ("verdict", "text"), ("evidence", "note")],
                       rows)


_ORDER = {"slower": 0, "failed": 0, "lost": 1, "missing": 1, "ambiguous": 2, "ambiguous (contended)": 2, "too noisy": 2, "not-ok": 3,
          "faster": 4, "new": 5, "same": 6}


def comparisons_markdown(comparisons: list, title: str, describe: Callable[[str, dict], str]) -> str:
    """A Markdown table for a CI job summary; regressions first and in bold."""
    lines = [f"### {title}", "", "| benchmark | parameters | base GB/s | new GB/s | change | verdict | evidence |",
             "|---|---|---|---|---|---|---|"]
    for c in sorted(comparisons, key=lambda c: _ORDER.get(c.verdict, 9)):
        verdict = f"**{c.verdict}**" if c.verdict in ("slower", "failed", "lost", "missing") else c.verdict
        lines.append(f"| {md_text(c.bench)} | {md_text(describe(c.bench, c.params))} | {format_gbps(c.base_gbps)} | "
                     f"{format_gbps(c.new_gbps)} | {_change(c)} | {verdict} | {md_text(c.note)} |")
    counts = {v: sum(c.verdict == v for c in comparisons)
              for v in ("slower", "lost", "missing", "ambiguous", "ambiguous (contended)", "too noisy", "faster")}
    lines += ["", (f"{counts['slower']} slower, {counts['lost']} lost, {counts['missing']} missing, "
                   f"{counts['ambiguous']} ambiguous, {counts['ambiguous (contended)']} ambiguous (contended), "
                   f"{counts['too noisy']} too noisy to judge, "
                   f"{counts['faster']} faster among {len(comparisons)} case(s).")]
    return "\n".join(lines) + "\n"
