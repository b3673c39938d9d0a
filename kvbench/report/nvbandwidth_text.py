"""nvbandwidth's testcases as nvbandwidth prints them (`kvbench results RUN --format nvbandwidth`): the
testcase's name, its bandwidth description, the matrix with GPU indices as column heads and N/A where a cell
was not measured, and its SUM line, so a reader who knows nvbandwidth's output reads kvbench's at a glance."""

from __future__ import annotations

from kvbench.analyze.links.nvbandwidth_shape import NvbandwidthCase


def case_text(case: NvbandwidthCase) -> str:
    """One testcase as nvbandwidth prints it, with each bidirectional cell's two directions after it and the
    buffer size each cell was measured at."""
    lines = [f"Running {case.name}.", case.description,
             "  " + "".join(f"{c:>10}" for c in range(case.columns))]
    for r, row in enumerate(case.matrix()):
        lines.append(f"{r:>2}" + "".join(f"{v:>10.2f}" if v is not None else f"{'N/A':>10}" for v in row))
    lines += ["", f"SUM {case.name} {case.total:.2f}"]
    for (r, c), (one, other) in sorted(case.directions.items()):
        lines.append(f"  ({r},{c}): {one:.2f} + {other:.2f} GB/s, each direction on its own stream")
    sizes = sorted(set(case.sizes.values()))
    lines.append(f"  buffer {', '.join(f'{s / 2**20:g} MiB' for s in sizes)} per copy (measured by kvbench)")
    return "\n".join(lines)


def nvbandwidth_text(cases: list[NvbandwidthCase], run_id: object) -> str:
    """Every testcase of a run, or one line saying there is none (and why that can be)."""
    if not cases:
        return (f"run {run_id} has no result nvbandwidth has a testcase for (pinned pcie.h2d/d2h/bidir, "
                "gpu.p2p, without a load beside them)\n")
    return "\n\n".join(case_text(c) for c in cases) + "\n"
