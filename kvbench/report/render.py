"""HTML (one self-contained file, plots embedded) and Markdown from a ReportContent."""

from __future__ import annotations

from typing import Any

import jinja2

from kvbench.analyze.regress.noise import allowance_words
from kvbench.benches.describe import describe_params
from kvbench.hardware.facts import Link
from kvbench.report.content import ReportContent
from kvbench.report.markdown_text import md_text
from kvbench.report.table import precision_text
from kvbench.units import format_gbps, format_size

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("kvbench.report", "templates"),
                          autoescape=lambda name: bool(name) and name.endswith(".html.j2"), undefined=jinja2.StrictUndefined)
_ENV.filters["md"] = md_text  # report.md.j2: what came from a run is text, never Markdown


def params_text(params: dict[str, Any], bench_id: str | None = None) -> str:
    """Parameters that differ from their benchmark's defaults, sizes in binary units."""
    params = dict(params)
    return describe_params(bench_id or params.pop("bench", ""), params)


def _links(host: dict[str, Any] | None) -> list[dict[str, Any]]:
    facts = (host or {}).get("facts") or {}
    rows = []
    for gpu in facts.get("gpus") or []:
        link = Link(**gpu["link"])
        rows.append({"device": f"GPU {gpu['index']} {gpu['name']}", "bus": gpu["bus_id"], "link": link})
    for dev in facts.get("pci") or []:
        link = Link(**dev["link"])
        if link.downtrained:
            rows.append({"device": f"PCI {dev['pci_class']}", "bus": dev["bdf"], "link": link})
    return rows


def _context(content: ReportContent) -> dict[str, Any]:
    return {"c": content, "links": _links(content.host), "gbps": format_gbps, "params": params_text, "size": format_size,
            "precision": lambda r: precision_text(r.get("metadata") or {}),
            "allowance": lambda x: (getattr(x, "allowance", None) or allowance_words(x.allowance_ln))
            if x.allowance_ln is not None else "-",
            "ms": lambda s, missing="-": f"{s * 1e3:.2f} ms" if s is not None else missing}


def html(content: ReportContent) -> str:
    return _ENV.get_template("report.html.j2").render(**_context(content))


def markdown(content: ReportContent) -> str:
    return _ENV.get_template("report.md.j2").render(**_context(content))
