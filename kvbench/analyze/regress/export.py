"""Exports that existing CI dashboards read.

* github-action-benchmark, `customBiggerIsBetter`: `[{"name", "unit", "value", "range", "extra"}]`.
* pytest-benchmark's JSON (so `pytest-benchmark compare` reads it); its stats are in seconds
  per operation, as pytest-benchmark's own are.
"""

from __future__ import annotations

import platform
from typing import Any

import numpy as np

from kvbench import __version__
from kvbench.analyze.regress.noise import THRESHOLD, case_allowance
from kvbench.analyze.runs import RunDocument, ok_results
from kvbench.benches.describe import describe_params


def case_name(result: dict[str, Any]) -> str:
    """`pcie.h2d[size=256MiB]`: the benchmark and only the parameters not at their default, sizes in
    binary units — short on a dashboard, and unchanged when a later kvbench adds a parameter (its
    default is left out of the name, so a series' history carries on)."""
    described = describe_params(result["bench"], result["params"])
    return result["bench"] if described == "(defaults)" else f"{result['bench']}[{','.join(described.split())}]"


def github_action_benchmark(doc: RunDocument, history: dict[str, list[float]] | None = None) -> list[dict[str, Any]]:
    """Each ok case as github-action-benchmark's entry; `extra` also says how far `kvbench compare`
    lets the case move before it is slower or faster — its own allowance from `history` (each case's
    earlier fast ends, `compare.case_history`), so a dashboard's alert and the gate read one figure,
    stated as every output states it ("compare: a drop beyond −13.9 % gates")."""
    out = []
    for r in ok_results(doc):
        earlier = (history or {}).get(r["case"]) or []
        allowed = case_allowance(earlier, THRESHOLD)  # the one allowance, against the run before (noise.py)
        out.append({
            "name": case_name(r),
            "unit": "GB/s",
            "value": r["gbps"]["median"],
            "range": f"{r['gbps']['p10']:.3f}..{r['gbps']['p90']:.3f}",
            "extra": f"run {doc['run']['id']}; samples {r['samples']}; "
                     + (f"peak {r['peak_gbps']:.1f} GB/s" if r["peak_gbps"] else "peak unknown")
                     + f"; compare: {allowed.words} ({allowed.basis})",
        })
    return out


def _quartiles(data: list[float]) -> tuple[float, float]:
    """(q1, q3) as pytest-benchmark computes them (its Stats: Wikipedia's method 3 for an odd count, the
    medians of the halves for an even one), so its `compare` reads our IQR as it reads its own."""
    n, d = len(data), sorted(data)
    if n == 1:
        return d[0], d[0]
    if n % 2 == 0:
        return float(np.median(d[: n // 2])), float(np.median(d[n // 2:]))
    k, r = n // 4, n % 4
    if r == 1:
        return 0.25 * d[k - 1] + 0.75 * d[k], 0.75 * d[3 * k] + 0.25 * d[3 * k + 1]
    return 0.75 * d[k] + 0.25 * d[k + 1], 0.25 * d[3 * k + 1] + 0.75 * d[3 * k + 2]


def _stats(samples: list[float]) -> dict[str, Any]:
    """pytest-benchmark's statistics of one case's samples (seconds), computed as it computes them
    (hostile trial H17: numpy's percentiles gave another IQR, and other outlier counts)."""
    data = np.asarray(samples, dtype=float)
    q1, q3 = _quartiles(data.tolist())
    iqr = q3 - q1
    mean, std = float(data.mean()), float(data.std(ddof=1)) if data.size > 1 else 0.0
    iqr_outliers = int(((data < q1 - 1.5 * iqr) | (data > q3 + 1.5 * iqr)).sum())
    stddev_outliers = int(((data < mean - std) | (data > mean + std)).sum())
    return {
        "min": float(data.min()), "max": float(data.max()), "mean": mean, "stddev": std,
        "rounds": int(data.size), "median": float(np.median(data)), "iqr": float(iqr), "q1": float(q1),
        "q3": float(q3), "iqr_outliers": iqr_outliers, "stddev_outliers": stddev_outliers,
        "outliers": f"{stddev_outliers};{iqr_outliers}", "ld15iqr": float(data[data >= q1 - 1.5 * iqr].min()),
        "hd15iqr": float(data[data <= q3 + 1.5 * iqr].max()), "ops": 1 / mean if mean else 0.0,
        "total": float(data.sum()), "iterations": 1, "data": data.tolist(),
    }


def pytest_benchmark(doc: RunDocument) -> dict[str, Any]:
    run = doc["run"]
    return {
        "machine_info": {"node": run["host_id"][:16], "processor": platform.processor(),
                         "machine": platform.machine(), "python_version": platform.python_version()},
        "commit_info": {"id": run.get("git_sha") or "", "dirty": bool(run.get("git_dirty")), "project": "kvbench"},
        "benchmarks": [
            {
                "group": r["bench"], "name": case_name(r), "fullname": case_name(r),
                "params": r["params"], "param": None,
                "extra_info": {"bytes_per_op": r["bytes"], "gbps_median": r["gbps"]["median"]},
                "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": 5, "max_time": 1.0,
                            "min_time": 0.0, "warmup": True},
                "stats": _stats(r["samples_s"]),
            }
            for r in ok_results(doc) if r.get("samples_s")
        ],
        "datetime": run["started_at"],
        "version": f"kvbench-{__version__}",
    }
