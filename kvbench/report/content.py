"""What a report says, computed once from run documents; HTML and Markdown only render it."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from kvbench.analyze.accept.drift import Drift
from kvbench.analyze.accept.health import health_path, load_health
from kvbench.analyze.accept.judge import Verdict, rules_for_host
from kvbench.analyze.accept.numa_ratio import NearFar, near_far
from kvbench.analyze.accept.pinned_ratio import PageableVsPinned, pageable_vs_pinned
from kvbench.analyze.accept.pipeline import acceptance_verdicts
from kvbench.analyze.accept.profile import Profile, gpus_to_match
from kvbench.analyze.accept.verdict import accept_overall, expected_here
from kvbench.analyze.decide.fit import fit_results
from kvbench.analyze.decide.peer_tier import with_peer_tier
from kvbench.analyze.decide.recompute import compute_rate
from kvbench.analyze.decide.restore_plan import TierPlan, decide, restore_plan
from kvbench.analyze.decide.transport_choice import TransportChoice, transport_choices
from kvbench.analyze.links.nvbandwidth_shape import nvbandwidth_cases
from kvbench.analyze.regress.compare import GATING, Comparison, compare_runs, differences
from kvbench.analyze.runs import RunDocument
from kvbench.kv.geometry import get_model
from kvbench.overall import Overall
from kvbench.report import accept_figure, history_plot, link_heatmap, nvbandwidth_figure, plots
from kvbench.report.analysis_tables import plan_answer_lines
from kvbench.report.drift import drift_lines
from kvbench.store.records import result_row

# Questions whose figures need GPU results; listed with the reason when the runs lack them.
GPU_QUESTIONS = {
    "pcie.h2d": ("Pinned vs pageable: how much does page-locking host memory buy?",
                 "no pcie.h2d results in these runs"),
    "pcie.bidir": ("Both directions at once: each direction and the sum", "no pcie.bidir results in these runs"),
    "numa": ("NUMA near vs far: host memory on which node feeds which GPU fastest?",
             "no pcie.h2d results with two or more numa:N nodes in these runs"),
    "multi": ("All GPUs at once: is the aggregate below the sum of singles (a shared uplink)?",
              "no pcie.h2d/d2h gpus=all results in these runs"),
}


@dataclass
class Figure:
    question: str
    png_base64: str


@dataclass
class ReportContent:
    title: str
    runs: list[dict[str, Any]]
    host: dict[str, Any] | None
    results: list[dict[str, Any]]
    figures: list[Figure] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    omitted: list[tuple[str, str]] = field(default_factory=list)  # (question, why its figure could not be drawn)
    fits: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    numa: list[NearFar] = field(default_factory=list)
    pageable: list[PageableVsPinned] = field(default_factory=list)
    plan: list[TierPlan] = field(default_factory=list)
    plan_title: str = ""
    plan_recompute: list[str] = field(default_factory=list)  # what recomputing the same tokens costs, in words
    under_load: list[dict[str, Any]] = field(default_factory=list)  # copies with a kernel beside them: both sides
    two_hop: list[dict[str, Any]] = field(default_factory=list)  # staged restores: rate, legs, overlap
    transports: list[TransportChoice] = field(default_factory=list)  # transport=both: Mooncake / NIXL, paired
    verdicts: list[Verdict] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    baseline: str | None = None
    overall: Overall | None = None  # the acceptance's one word and why
    baseline_differences: list[str] = field(default_factory=list)  # host or software that changed since
    drift: list[str] = field(default_factory=list)  # the inventory drift of the last run (report/drift.py), in lines
    no_gpu: str | None = None  # the one line a report of a host without GPUs gives in place of the GPU questions

    def verdict_counts(self) -> dict[str, int]:
        """PASS / FAIL / SKIP / INCOMPLETE counts of the acceptance rules: the report's first line."""
        return {kind: sum(v.verdict == kind for v in self.verdicts) for kind in ("PASS", "FAIL", "SKIP", "INCOMPLETE")}

    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.verdict == "FAIL"]

    def comparison_counts(self) -> dict[str, int]:
        kinds = ("slower", "failed", "lost", "missing", "faster", "same", "ambiguous", "ambiguous (contended)", "too noisy",
                 "new", "not-ok")
        return {kind: n for kind in kinds if (n := sum(x.verdict == kind for x in self.comparisons))}

    def regressions(self) -> list[Comparison]:
        return [x for x in self.comparisons if x.verdict in GATING]


def _drawn(content: ReportContent, question: str, draw) -> Figure | None:
    """`draw()`'s figure for the report, or None; a figure that cannot be drawn is omitted with a
    line saying why (`content.omitted`), never the report's end."""
    try:
        return _figure(draw())
    except Exception as exc:  # matplotlib/seaborn on data it cannot draw: one figure lost, not the report
        text = str(exc).strip().splitlines()
        content.omitted.append((question, f"{type(exc).__name__}: {text[0] if text else ''}".strip()))
        plots.plt.close("all")
        return None


def _figure(fig) -> Figure | None:
    if fig is None:
        return None
    title = fig.get_suptitle() or fig.axes[0].get_title()  # a figure of panels asks its question above them
    return Figure(" ".join(title.split()), base64.b64encode(plots.png_bytes(fig)).decode())


def build(docs: list[RunDocument], baseline: RunDocument | None = None, model: str = "Llama-3.1-70B",
          tokens: int = 8192, block_tokens: int = 16,
          profile: Profile | None = None, baseline_history: dict[str, list[float]] | None = None,
          drift: Drift | None = None, pooled_baseline: RunDocument | None = None) -> ReportContent:
    """What a report of `docs` says; `baseline_history`: each case's earlier fast ends
    (`compare.case_history`) and `pooled_baseline` the baseline as `compare` weighs it (the median of its
    `--repeat` runs: analyze/regress/pooled.py), so the comparison with `baseline` is `kvbench compare`'s own."""
    results = [{**r, "run_id": d["run"]["id"]} for d in docs for r in d["results"]]
    host = next((d.get("host") for d in docs if d.get("host") and d["host"].get("facts")), None)
    content = ReportContent(
        title=f"kvbench report — run{'s' if len(docs) > 1 else ''} {', '.join(str(d['run']['id']) for d in docs)}",
        runs=[d["run"] for d in docs], host=host, results=results,
    )
    benches = {r["bench"] for r in results if r["status"] == "ok"}
    for bench in sorted(benches):
        if fig := _drawn(content, f"How fast does {bench} move bytes, by transfer size?",
                         lambda bench=bench: plots.bandwidth_vs_size(results, bench)):
            content.figures.append(fig)
    drawn = {"pcie.h2d": "pcie.h2d" in benches}  # pinned vs pageable is its rate-vs-size figure
    for key, draw in (("kv", plots.kv_strategies), ("numa", plots.numa_heatmap),
                      ("pcie.bidir", plots.bidirectional), ("multi", plots.all_gpus)):
        question = GPU_QUESTIONS[key][0] if key in GPU_QUESTIONS else "Which KV restore strategy is fastest?"
        if fig := _drawn(content, question, lambda draw=draw: draw(results)):
            content.figures.append(fig)
            drawn[key] = True
    gpu_count = len(((host or {}).get("facts") or {}).get("gpus") or []) or None
    if fig := _drawn(content, nvbandwidth_figure.QUESTION, lambda: nvbandwidth_figure.nvbandwidth_figure(
            nvbandwidth_cases([r for r in results if r["run_id"] == docs[-1]["run"]["id"]], gpu_count))):
        content.figures.append(fig)  # the newest run's, as nvbandwidth users know the matrices
    if fig := _drawn(content, link_heatmap.QUESTION, lambda: link_heatmap.link_heatmap(results)):
        content.figures.append(fig)  # only a run with cluster results (pairs naming two hosts) has one
    content.numa = near_far(results)
    content.pageable = pageable_vs_pinned(results)
    facts = (host or {}).get("facts") or {}
    if host is not None and facts and not facts.get("gpus"):
        content.no_gpu = f"GPU paths were not measured: this host has no GPU ({facts.get('gpu_reason') or 'none found'})."
    else:
        content.missing = [(question, why) for key, (question, why) in GPU_QUESTIONS.items() if not drawn.get(key)]
    stored_rows = [{"bench": r["bench"], "status": r["status"], "params": r["params"], "bytes_per_op": r["bytes"],
                    "median_s": (r.get("seconds") or {}).get("median"), "extra": r.get("metadata") or {},
                    "run_id": r["run_id"]}
                   for r in results]
    content.fits = fit_results(stored_rows)
    content.under_load = [r for r in results if r["status"] == "ok" and (r.get("metadata") or {}).get("load")]
    content.two_hop = [r for r in results if r["status"] == "ok" and (r.get("metadata") or {}).get("legs")]
    content.transports = transport_choices(results)
    geometry = get_model(model)
    hosts = {d["run"]["id"]: d["run"].get("host_id") for d in docs}
    plan_rows = [{**result_row(r), "run_id": r["run_id"], "host_id": hosts.get(r["run_id"])} for r in results]
    gpus = ((host or {}).get("facts") or {}).get("gpus") or []
    rate = compute_rate([r for r in plan_rows if r["bench"] == "gpu.matmul"], [g.get("name") or "" for g in gpus],
                        None, None)
    tiers = with_peer_tier(restore_plan(geometry, tokens, "bf16", 1, block_tokens, plan_rows), geometry, tokens,
                           "bf16", 1, block_tokens, plan_rows, len(gpus))
    answer = decide(geometry, tokens, "bf16", 1, tiers, rate)
    content.plan, content.plan_recompute = answer.tiers, plan_answer_lines(answer)
    content.plan_title = f"Restore or recompute {tokens} tokens of {geometry.name} (bf16, {block_tokens}-token blocks)"
    # the verdict `accept --run` gives on the same run and profile (kvbench/analyze/accept/pipeline.py)
    judged = {"results": results, "host": {**(host or {}), "facts": facts}}
    rules = rules_for_host(gpus_to_match(facts, profile))
    content.verdicts = acceptance_verdicts(judged, rules, profile, load_health(health_path(None)), drift)
    content.drift = [line for line in drift_lines(drift) if "nothing to compare" not in line] if drift else []
    content.overall = accept_overall(content.verdicts, expected_here(facts, profile), runs=docs)
    if fig := _drawn(content, accept_figure.QUESTION, lambda: accept_figure.acceptance_figure(content.verdicts)):
        content.figures.insert(0, fig)  # an acceptance report opens with its rules, under the verdict
    # the first heading says the verdict first, and where no host profile was given, that it judged no inventory
    # (issue 57 item 6: the report said PASS on 2 rules where accept --profile said FAIL on 7)
    unprofiled = " (no host profile: inventory not judged)" if profile is None else ""
    content.title = f"{content.overall.word} — {content.title}{unprofiled}"
    if baseline is not None:
        content.baseline = f"run {baseline['run']['id']}"
        # Across a driver upgrade or onto another box too: the report is most needed that day, so it
        # compares anyway and states what differs rather than refusing.
        content.baseline_differences = differences(baseline, docs[-1])
        content.comparisons = compare_runs(pooled_baseline or baseline, docs[-1], cross_host=True,
                                           history=baseline_history)
    for bench, found, allowances in history_series([*([baseline] if baseline is not None else []), *docs],
                                                   content.comparisons):
        question = f"Has {bench} held its level on this host, run after run?"
        draw = (lambda b=bench, f=found, a=allowances: history_plot.history_figure(b, f, a))
        if fig := _drawn(content, question, draw):
            content.figures.append(fig)
    return content


def history_series(docs: list[RunDocument], comparisons: list[Comparison]
                   ) -> list[tuple[str, list[tuple[list[dict[str, Any]], list[Any]]], list[float | None]]]:
    """Per benchmark, the cases measured ok in two or more of `docs` (each run once, in start order) as
    `history_plot.history_figure` takes them, with their level segments and compare's allowance for each case
    where `comparisons` judged it."""
    from kvbench.analyze.regress.history import series_segments

    seen: dict[Any, dict[str, Any]] = {}
    for d in docs:
        seen.setdefault(d["run"]["id"], d)
    ordered = sorted(seen.values(), key=lambda d: str(d["run"].get("started_at") or ""))
    cases: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for d in ordered:
        for r in d["results"]:
            if r["status"] == "ok" and (r.get("gbps") or {}).get("median"):
                key = (r["bench"], repr(sorted(r["params"].items())))
                cases.setdefault(key, []).append({**r, "run_id": d["run"]["id"], "started_at": d["run"].get("started_at")})
    allowed = {(x.bench, repr(sorted(x.params.items()))): x.allowance_ln for x in comparisons}
    out: dict[str, tuple[list, list]] = {}
    for (bench, key), series in cases.items():
        if len(series) >= 2:
            found, allowances = out.setdefault(bench, ([], []))
            found.append((series, series_segments(series)))
            allowances.append(allowed.get((bench, key)))
    return [(bench, found, allowances) for bench, (found, allowances) in sorted(out.items())]
