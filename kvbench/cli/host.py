"""`kvbench info`, `kvbench list`, `kvbench version`: this host and what kvbench can do on it."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from kvbench import __version__
from kvbench.cli.app import app
from kvbench.cli.common import (
    JsonOption,
    PeaksOption,
    check_writable,
    conclude,
    existing_store,
    out,
    this_host_ids,
    use_peaks,
    write_json,
)
from kvbench.errors import BadInput


@app.command()
def info(json_out: JsonOption = None, peaks: PeaksOption = None,
         db: Annotated[str | None, typer.Option(metavar="URL", help="results database whose stored GPU results for this host are "
                                                      "checked too (default: the embedded one, if it exists)")] = None,
         ) -> None:
    """Host facts (CPU, NUMA, PCIe links, GPUs, NICs, NVMe, DRAM), the spec peaks of each path, and
    what looks wrong: a downtrained link under load, far-NUMA host memory, PCIe replays in a run."""
    from kvbench.analyze.accept.host_flags import flags_from_store
    from kvbench.report.info import info_document, render_info
    from kvbench.run.this_host import host_facts

    check_writable(json_out, "--json", db)
    use_peaks(peaks)
    facts = host_facts()
    store = existing_store(db)
    stored = flags_from_store(store, this_host_ids(store)) if store else []
    doc = info_document(facts, os.sched_getaffinity(0), stored)
    if json_out:
        write_json(doc, json_out)
    if json_out != "-":
        render_info(out, doc)


@app.command()
def doctor(json_out: JsonOption = None,
           seconds: Annotated[float, typer.Option(help="how long background load is sampled, s")] = 2.0) -> None:
    """What to fix on this box before an acceptance run: CPU governor, turbo, background load, swap,
    CPU and GPU throttling, other processes on the GPUs. Exit 1 when something needs fixing."""
    from kvbench.hardware.doctor import Box, run_checks, verdict
    from kvbench.hardware.nvml import nvml_session
    from kvbench.report.doctor import doctor_doc, doctor_table

    if not 0 < seconds <= 600:
        raise BadInput(f"bad --seconds {seconds:g}: give a window between 0 and 600 s")
    check_writable(json_out, "--json")  # before the seconds of sampling
    with nvml_session() as nvml:
        findings = run_checks(Box(nvml=nvml, seconds=seconds, own_pid=os.getpid()))
    if json_out:
        write_json(doctor_doc(findings), json_out)
    if json_out != "-":
        out.print(doctor_table(findings))
    conclude(verdict(findings))


@app.command("list")
def list_cmd(json_out: JsonOption = None) -> None:
    """Every benchmark, suite, executor and memory kind, with whether it can run here and why not."""
    from kvbench.plan.catalog import catalog
    from kvbench.report.listing import listing_tables

    check_writable(json_out, "--json")
    doc = catalog()
    if json_out:
        write_json(doc, json_out)
    if json_out == "-":
        return
    for table in listing_tables(doc):
        out.print(table)


@app.command()
def version() -> None:
    """Print kvbench's version (as --version does)."""
    out.print(f"kvbench {__version__}")


host_app = typer.Typer(no_args_is_help=True, help="The hosts a database holds, and merging one box's ids.")
app.add_typer(host_app, name="host")


@host_app.command("list")
def host_list(json_out: JsonOption = None,
              db: Annotated[str | None, typer.Option(metavar="URL", help="results database (default: $KVBENCH_DB or the embedded one)")]
              = None) -> None:
    """Every host in the database: id, hostname, first seen, runs, and which one is this box."""
    from kvbench.report.analysis_tables import hosts_table
    from kvbench.store import open_store

    check_writable(json_out, "--json", db)
    store = open_store(db, read_only=True)
    mine = set(this_host_ids(store))
    runs = store.run_counts()
    hosts = [{"id": hid, "hostname": h["hostname"], "first_seen": h["first_seen"].isoformat() if h["first_seen"] else None,
              "runs": runs.get(hid, 0), "this_box": hid in mine} for hid, h in sorted(store.hosts().items())]
    if json_out:
        write_json({"hosts": hosts, "aliases": store.aliases()}, json_out)
    if json_out != "-":
        out.print(hosts_table(hosts, f"hosts · {store.url}"))


@host_app.command("merge")
def host_merge(
    old: Annotated[str, typer.Argument(help="the host id to merge away (kvbench host list shows them)")],
    into: Annotated[str | None, typer.Argument(help="the host id to merge into (default: this box's)")] = None,
    db: Annotated[str | None, typer.Option(metavar="URL", help="results database (default: $KVBENCH_DB or the embedded one)")] = None,
) -> None:
    """Move OLD's runs to INTO (one box that appeared under two ids); OLD is kept as an alias."""
    from kvbench.run.hosts import stored_id, this_host_ids
    from kvbench.run.lifecycle import reap
    from kvbench.run.this_host import host_facts
    from kvbench.store import open_store

    store = open_store(db, existing=True)
    reap(store, this_host_ids(store, host_facts()))  # a dead run of OLD is crashed, a live one refuses the merge
    into = store.aliases().get(into, into) if into is not None else None  # a merged id stands for its host
    if into is not None and store.host(into) is None:
        raise BadInput(f"no host '{into}' in {store.url} to merge into (kvbench host list shows them)")
    target = into or stored_id(store, host_facts())
    if old == target:
        raise BadInput(f"bad merge: host '{old}' is the host to merge into")
    moved = store.merge_host(old, target)
    out.print(f"host {old[:16]}… merged into {target[:16]}…: {moved} run(s) moved; the old id is kept as an alias")


@host_app.command("profile")
def host_profile(output: Annotated[str, typer.Option("-o", "--output", help="profile TOML to write, or - for "
                                                                             "standard output")] = "-") -> None:
    """Write this host's inventory as a host profile (GPUs, links, NICs, NVMe, NUMA, DRAM) for
    kvbench accept --profile: edit it, or keep it as the SKU's expected inventory."""
    from datetime import datetime, timezone

    from kvbench.analyze.accept.profile import profile_toml
    from kvbench.cli.common import check_writable, write_text
    from kvbench.run.this_host import host_facts

    check_writable(output, "-o")
    facts = host_facts().to_dict()
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    write_text(profile_toml(facts, f"measured on {facts.get('hostname') or 'this host'} by kvbench host profile, "
                                   f"{when}"), output)


@host_app.command("drift")
def host_drift(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id or 'latest' (default: this box's latest run)")]
    = "latest",
    json_out: JsonOption = None,
    db: Annotated[str | None, typer.Option(metavar="URL", help="results database (default: $KVBENCH_DB or the embedded one)")] = None,
) -> None:
    """What changed in the box's inventory (GPUs and their serials, PCIe links at max, NICs, NVMe, NUMA,
    DRAM) by RUN: since the box's first run and since the run before, each change with the run it has
    held since."""
    from kvbench.analyze.accept.drift import run_drift
    from kvbench.report.drift import drift_lines
    from kvbench.store import open_store

    check_writable(json_out, "--json", db)
    store = open_store(db, read_only=True)
    mine = this_host_ids(store) if run_ref == "latest" else None
    drift = run_drift(store, store.resolve_run(run_ref, mine))
    if json_out:
        write_json(drift.to_dict(), json_out)
    if json_out != "-":
        for line in drift_lines(drift):
            out.print(line, markup=False, highlight=False)
