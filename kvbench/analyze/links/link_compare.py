"""Two cluster runs compared link by link: `compare cluster:A cluster:B`.

A link is one directed pair of hosts of one matrix (benchmark, pattern and what was measured: the
keys analyze/links/link_matrix.py leaves out of a matrix's shape — ports, addresses, rounds — may differ
between launches). Each link is judged as `compare` judges a case (analyze/regress/compare.py's
`compare_case`: the same noise rule, verdict words and contention weighing), except that a link ok
in the base and failed or absent in the new run is `lost` (it gates). The slow links are named, and
the hosts found in most of them: a host in most slow links is the likelier culprit than the links.

Then the two launches are judged against themselves (analyze/links/link_noise.py): on a shared box one
link's drop within the launch's own link-to-link noise is not that link's change.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from typing import Any

from kvbench.analyze.regress.compare import Comparison, compare_case
from kvbench.analyze.regress.contended import plausible_slowdown
from kvbench.analyze.links.link_matrix import PAIR_KEYS, pair_of
from kvbench.analyze.links.link_noise import weigh_link_noise
from kvbench.analyze.regress.noise import THRESHOLD
from kvbench.analyze.runs import RunDocument

LinkKey = tuple[str, str, str, str, str]  # bench, pattern, shape (JSON), source host, destination host


def link_key(result: dict[str, Any]) -> LinkKey | None:
    """The link a run document's result measured, None for a result that names no pair."""
    row = {"params": result["params"], "extra": result.get("metadata") or {}}
    pair = pair_of(row)
    if pair is None:
        return None
    cluster = row["extra"].get("cluster") or {}
    shape = {k: v for k, v in result["params"].items() if k not in PAIR_KEYS}
    pattern = cluster.get("pattern") or result["params"].get("pattern") or ""
    return result["bench"], str(pattern), json.dumps(shape, sort_keys=True, default=str), *pair


def _links(doc: RunDocument) -> dict[LinkKey, dict[str, Any]]:
    """Each link's result, an `ok` one where the link was recorded more than once."""
    out: dict[LinkKey, dict[str, Any]] = {}
    for result in doc["results"]:
        key = link_key(result)
        if key is not None and (key not in out or (out[key]["status"] != "ok" and result["status"] == "ok")):
            out[key] = result
    return out


def compare_links(base: RunDocument, new: RunDocument, threshold: float = THRESHOLD,
                  history: dict[str, list[float]] | None = None, require_quiet: bool = False) -> list[Comparison]:
    """Every link of either cluster run; `history[case]` the earlier fast ends of the new result's case
    (`case_history`'s rule); `require_quiet` as compare's."""
    before, after = _links(base), _links(new)
    out = []
    for key in sorted(set(before) | set(after)):
        b, n = before.get(key), after.get(key)
        if n is None:
            ok = b["status"] == "ok"
            out.append(Comparison(b["bench"], b["params"], b["case"], (b.get("gbps") or {}).get("median"), None, None,
                                  "lost" if ok else "not-ok",
                                  f"{'ok' if ok else b['status']} in {base['run']['id']}, no result in "
                                  f"{new['run']['id']}"))
            continue
        if b is None:
            failed = n["status"] == "failed"
            out.append(Comparison(n["bench"], n["params"], n["case"], None, (n.get("gbps") or {}).get("median"), None,
                                  "failed" if failed else "new",
                                  f"new link, failed: {n.get('reason')}" if failed else "new link"))
            continue
        found = compare_case(b, n, threshold, (history or {}).get(n["case"]), require_quiet)
        if b["status"] == "ok" and found.verdict == "failed":  # what went away is lost, whatever took it
            found = replace(found, verdict="lost", base_gbps=b["gbps"]["median"],
                            note=f"ok in base, failed in new: {n.get('reason') or 'no reason recorded'}")
        out.append(found)
    named = [_named(c, key) for c, key in zip(out, sorted(set(before) | set(after)), strict=True)]
    explains = {n["case"]: plausible_slowdown(n) for n in after.values() if n["status"] == "ok"}
    return weigh_link_noise(named, explains=explains)  # a launch judged against itself: analyze/links/link_noise.py


def _named(c: Comparison, key: LinkKey) -> Comparison:
    """`c` with its link's hosts in its parameters as the matrix names them (a rank that never joined
    stored no host: `rank 2 (host unknown)`), so every line names the link."""
    if (c.params.get("src_host"), c.params.get("dst_host")) == key[3:]:
        return c
    return replace(c, params={**c.params, "src_host": key[3], "dst_host": key[4]})


def _link(c: Comparison) -> str:
    return f"{c.params.get('src_host')}→{c.params.get('dst_host')}"


def slow_links_line(comparisons: list[Comparison], base_id: Any, held: bool = False) -> str:
    """The gating links in one line, the slowest first, and the hosts in most of them: `link n2→n0 -60 %
    since cluster:A; host n2 in 3 of 4 slow links`. `held`: the drops held back as contended instead."""
    from kvbench.analyze.regress.contended import AMBIGUOUS_CONTENDED

    if held:
        slow = sorted((c for c in comparisons if c.verdict == AMBIGUOUS_CONTENDED and (c.change or 0.0) < 0),
                      key=lambda c: (c.change or 0.0, _link(c)))
        gone = []
    else:
        slow = sorted((c for c in comparisons if c.verdict == "slower"), key=lambda c: (c.change or 0.0, _link(c)))
        gone = [c for c in comparisons if c.verdict in ("lost", "failed", "missing")]
    parts = [f"link {_link(c)} {c.bench} {c.change:+.0%} since {base_id}" for c in slow]
    parts += [f"link {_link(c)} {c.bench} {c.verdict} ({c.note})" for c in gone]
    bad = slow + gone
    if not bad:
        return ""
    hosts = Counter(h for c in bad for h in {c.params.get("src_host"), c.params.get("dst_host")})
    most = max(hosts.values())
    named = ", ".join(sorted(str(h) for h, k in hosts.items() if k == most))
    if len(bad) > 1 and most > 1:
        parts.append(f"host{'s' if ',' in named else ''} {named} in {most} of {len(bad)} slow or lost links")
    return "; ".join(parts)


def link_history(store, new: dict) -> dict[str, list[float]]:
    """Each link's earlier fast ends (its case on the new cluster run's hosts and context, in runs before
    the new cluster run's first): the between-run noise its change is weighed against."""
    if store is None:
        return {}
    runs = [r["run"] for r in new.get("ranks") or []]
    ids = [r["id"] for r in runs if isinstance(r.get("id"), int)]
    hosts = sorted({r["host_id"] for r in runs} or {new["run"]["host_id"]})
    return store.case_fast_ends(hosts, new["run"]["context_id"], [r["case"] for r in new["results"]],
                                min(ids) if ids else None)
