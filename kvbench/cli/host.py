"""`kvbench info`, `kvbench list`, `kvbench version`: this host and what kvbench can do on it."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from kvbench import __version__
from kvbench.cli.app import app
from kvbench.cli.common import existing_store, out


@app.command()
def info(as_json: Annotated[bool, typer.Option("--json", help="print the facts as JSON")] = False,
         db: Annotated[str | None, typer.Option(help="results database whose stored GPU results for this host are "
                                                      "checked too (default: the embedded one, if it exists)")] = None,
         ) -> None:
    """Host facts (CPU, NUMA, PCIe links, GPUs, NICs, NVMe, DRAM), the spec peaks of each path, and
    what looks wrong: a downtrained link under load, far-NUMA host memory, PCIe replays in a run."""
    from kvbench.analyze.host_flags import flags_from_store
    from kvbench.hardware import fingerprint
    from kvbench.report.info import info_document, render_info
    from kvbench.this_host import host_facts

    facts = host_facts()
    store = existing_store(db)
    stored = flags_from_store(store, fingerprint.host_id(facts)) if store else []
    doc = info_document(facts, os.sched_getaffinity(0), stored)
    if as_json:
        out.print_json(json.dumps(doc, default=str))
    else:
        render_info(out, doc)


@app.command("list")
def list_cmd(as_json: Annotated[bool, typer.Option("--json", help="print the listing as JSON")] = False) -> None:
    """Every benchmark, suite, executor and memory kind, with whether it can run here and why not."""
    from kvbench.catalog import catalog
    from kvbench.report.listing import listing_tables

    doc = catalog()
    if as_json:
        out.print_json(json.dumps(doc, default=str))
        return
    for table in listing_tables(doc):
        out.print(table)


@app.command()
def version() -> None:
    """Print kvbench's version."""
    out.print(__version__)
