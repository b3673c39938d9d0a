"""`kvbench replay --plot FILE`: the replay's report section as one figure — hit ratio against capacity
(the sweep, beside each configuration), the TTFT CDF of each configuration against recomputing
everything, and each link's demand over trace time against its measured (or spec) rate."""

from __future__ import annotations

from typing import Any

import numpy as np

from kvbench.report.plots import figure_bytes, plt


def replay_figure(doc: dict[str, Any], answers: list[Any]) -> Any:
    """Three panels from the replay document `doc` and its configurations' answers (per-request TTFT,
    per-second link demand)."""
    fig, (hit, cdf, links) = plt.subplots(1, 3, figsize=(16, 4.6))
    sweep = doc.get("sweep")
    if sweep:
        x = [p["capacity_bytes"] / 1e9 for p in sweep["points"]]
        hit.plot(x, [100 * p["hit_ratio"] for p in sweep["points"]], "o-", label=f"blocks ({sweep['tier']} swept)")
        hit.plot(x, [100 * p["token_hit_ratio"] for p in sweep["points"]], "s--", label="tokens")
        hit.axhline(100 * sweep["unbounded_hit_ratio"], color="grey", ls=":", label="unbounded (blocks)")
        if sweep["reaches_90pct_of_unbounded_bytes"]:
            hit.axvline(sweep["reaches_90pct_of_unbounded_bytes"] / 1e9, color="C3", ls=":",
                        label="90 % of unbounded")
        hit.set_xscale("log")
        hit.set_xlabel(f"{sweep['tier']} capacity (GB)")
    else:
        hit.barh([c["label"] for c in doc["configs"]], [100 * c["hit_ratio"] for c in doc["configs"]])
        hit.set_xlabel("hit ratio, blocks (%)")
    hit.set_ylabel("hit ratio (%)" if sweep else "")
    hit.set_title("hit ratio against capacity")
    hit.legend(fontsize=8) if sweep else None
    for i, answer in enumerate(answers):
        ttft = np.sort(answer.ttft)
        cdf.plot(ttft * 1e3, np.arange(1, len(ttft) + 1) / len(ttft), color=f"C{i}", label=answer.label)
    cdf.set_xscale("log")
    cdf.set_xlabel("TTFT (ms)")
    cdf.set_ylabel("fraction of requests")
    cdf.set_title(f"TTFT CDF (compute {doc['compute']['kind']})")
    cdf.legend(fontsize=8)
    first = answers[0]
    for i, load in enumerate(first.links):
        if load.demand is None or not len(load.demand):
            continue
        window = max(1, len(load.demand) // 200)  # at most 200 points: a moving mean of `window` seconds
        smooth = np.convolve(load.demand, np.ones(window) / window, mode="valid")
        links.plot(np.arange(len(smooth)) + window / 2, 100 * smooth, color=f"C{i}",
                   label=f"{load.link} {load.direction} ({load.gbps:.3g} GB/s, {load.kind})")
    links.axhline(100, color="black", lw=0.8, ls="--", label="the link's rate")
    links.set_yscale("symlog", linthresh=1)
    links.set_xlabel("trace time (s)")
    links.set_ylabel("demand ÷ rate (%)")
    links.set_title(f"link demand, {first.label}")
    links.legend(fontsize=7)
    fig.suptitle(f"{doc['model']['name']} {doc['model']['dtype']} tp={doc['model']['tp']}: "
                 f"{doc['trace']['requests']:,} requests of {doc['trace']['path'].rsplit('/', 1)[-1]}", fontsize=11)
    fig.tight_layout()
    return fig


def write_replay_figure(doc: dict[str, Any], answers: list[Any], path: str) -> None:
    fmt = path.rsplit(".", 1)[-1].lower()
    data = figure_bytes(replay_figure(doc, answers), "svg" if fmt == "svg" else "png")
    with open(path, "wb") as f:
        f.write(data)
