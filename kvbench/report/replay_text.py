"""`kvbench replay` in the terminal: each configuration's hit ratios, tiers, links and TTFT, the
capacity sweep, and the projected beside the executed restores."""

from __future__ import annotations

from typing import Any

from rich.table import Table


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _ms(x: float) -> str:
    """A time in ms, or in s from a second up (8.37 s, not 8.37e+03 ms)."""
    return f"{x:.3g} s" if x >= 1 else f"{1e3 * x:.3g} ms"


def _size(b: float | None) -> str:
    if b is None:
        return "unbounded"
    for unit, f in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if b >= f:
            return f"{b / f:.3g} {unit}"
    return f"{b:.0f} B"


def config_tables(doc: dict[str, Any]) -> list[Any]:
    """One summary table across configurations, then each configuration's tiers and links."""
    summary = Table(title=f"replay of {doc['trace']['requests']:,} requests ({doc['trace']['block_references']:,} "
                          f"block references) with {doc['model']['name']} {doc['model']['dtype']} tp={doc['model']['tp']}")
    for col in ("config", "hit ratio (blocks)", "token hit ratio", "request hit ratio (mean)", "TTFT p50",
                "TTFT p99", "recompute-all p50/p99", "infinite cache p50/p99"):
        summary.add_column(col)
    for c in doc["configs"]:
        summary.add_row(c["label"], _pct(c["hit_ratio"]), _pct(c["token_hit_ratio"]), _pct(c["request_hit_ratio"]),
                        _ms(c["ttft_s"]["p50"]), _ms(c["ttft_s"]["p99"]),
                        f"{_ms(c['ttft_recompute_all_s']['p50'])} / {_ms(c['ttft_recompute_all_s']['p99'])}",
                        f"{_ms(c['ttft_infinite_cache_s']['p50'])} / {_ms(c['ttft_infinite_cache_s']['p99'])}")
    out: list[Any] = [summary]
    for c in doc["configs"]:
        tiers = Table(title=f"{c['label']}: tiers")
        for col in ("tier", "policy", "capacity", "blocks", "hit ratio", "restored", "written", "restore Σ",
                    "recompute Σ", "pays?", "priced by"):
            tiers.add_column(col)
        for t in c["tiers"]:
            legs = "; ".join(f"{leg['link']} {leg['gbps']:.3g} GB/s α {leg['alpha_us']:.3g} µs ({leg['kind']})"
                             for leg in t["restore_legs"]) or "in place"
            tiers.add_row(t["name"], t["policy"], _size(t["capacity_bytes"]),
                          "∞" if t["capacity_blocks"] is None else f"{t['capacity_blocks']:,}", _pct(t["hit_ratio"]),
                          _size(t["bytes_restored"]), _size(t["bytes_written"]), f"{t['restore_s']:.4g} s",
                          f"{t['recompute_same_s']:.4g} s",
                          "yes" if t["pays_for_itself"] else ("—" if not t["bytes_restored"] else "NO: recompute"),
                          legs)
        out.append(tiers)
        if c["links"]:
            links = Table(title=f"{c['label']}: links (demand each second ÷ the link's rate)")
            for col in ("link", "direction", "GB/s", "bytes", "p50", "p99", "max", "s over", "longest wait"):
                links.add_column(col)
            for x in c["links"]:
                u = x["utilisation"]
                links.add_row(x["link"], x["direction"], f"{x['gbps']:.3g} ({x['kind']})", _size(x["bytes"]),
                              _pct(u["p50"]), _pct(u["p99"]), _pct(u["max"]), str(x["seconds_over_capacity"]),
                              f"{x['max_wait_s']:.3g} s")
            out.append(links)
    return out


def sweep_table(doc: dict[str, Any]) -> Table | None:
    s = doc.get("sweep")
    if not s:
        return None
    knee, reach = s["knee_bytes"], s["reaches_90pct_of_unbounded_bytes"]
    table = Table(title=f"hit ratio against {s['tier']} capacity: unbounded {_pct(s['unbounded_hit_ratio'])}; knee "
                        f"{_size(knee) if knee else 'not within the sweep'}; 90 % of unbounded "
                        f"{'reached at ' + _size(reach) if reach else 'not reached within the sweep'}")
    for col in ("capacity", "blocks", "hit ratio (blocks)", "token hit ratio", "request hit ratio", "TTFT p50",
                "TTFT p99", ""):
        table.add_column(col)
    for p in s["points"]:
        mark = "knee" if knee is not None and p["capacity_bytes"] == knee else ""
        table.add_row(_size(p["capacity_bytes"]), f"{p['capacity_blocks']:,}", _pct(p["hit_ratio"]),
                      _pct(p["token_hit_ratio"]), _pct(p["request_hit_ratio"]), _ms(p["ttft_s"]["p50"]),
                      _ms(p["ttft_s"]["p99"]), mark)
    return table


def notes(doc: dict[str, Any]) -> list[str]:
    lines = [f"compute: {doc['compute']['tflops']:g} TFLOP/s × MFU {doc['compute']['mfu']:g} ({doc['compute']['source']})",
             f"TTFT model: {doc['ttft_model']}",
             "hit ratio = blocks served ÷ blocks requested; token hit ratio counts a partial last block's tokens; "
             "request hit ratio = the mean of each request's (AIPerf's)",
             f"unbounded cache: {_pct(doc['configs'][0]['unbounded']['hit_ratio'])} of blocks, "
             f"{_pct(doc['configs'][0]['unbounded']['token_hit_ratio'])} of tokens, "
             f"{_pct(doc['configs'][0]['unbounded']['request_hit_ratio'])} per request; {doc['published']}"]
    spec = sorted({leg["link"] for c in doc["configs"] for t in c["tiers"]
                   for leg in t["restore_legs"] + ([t["writeback"]] if t["writeback"] else []) if leg["kind"] == "spec"})
    if spec:
        lines.append(f"spec, not measured on this host: {', '.join(spec)} (every figure priced with them is a spec figure)")
    return lines


def executed_table(executed: dict[str, Any]) -> Table:
    table = Table(title=f"executed: {executed['requests']} requests ({executed['restores']} with a restore) through "
                        f"{executed['path']}, run {executed['run_id']}")
    for col in ("per-request restore", "projected", "executed", "projected ÷ executed"):
        table.add_column(col)
    for q in ("p50", "p99"):
        table.add_row(q, _ms(executed["projected_s"][q]), _ms(executed["executed_s"][q]), f"{executed['ratio'][q]:.3f}")
    return table
