"""`kvbench crosscheck dram|storage|pcie|net`: kvbench beside a peer tool, with their ratio, ending in one
verdict: PASS (exit 0) within the printed goal, FAIL (1) outside it, INCOMPLETE (3) with the reason when
kvbench's case or the peer tool could not run; a crosscheck with no goal (net) says SHOWN (exit 0), never
PASS. A signal (Ctrl-C, SIGTERM, SIGHUP) ends a crosscheck as
it ends a run: its files and peer processes are removed on the way out, and the status is the shell's
for that signal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from kvbench.cli.app import crosscheck_app
from kvbench.cli.common import conclude, err, out
from kvbench.errors import BadInput
from kvbench.overall import combine


def crosscheck_verdict(*args, **kwargs):
    """kvbench.crosscheck.common's verdict, imported when a crosscheck runs: that package loads the
    benchmarks (numpy and more), which `kvbench --version` and every other command must not pay for."""
    from kvbench.crosscheck.common import crosscheck_verdict as verdict

    return verdict(*args, **kwargs)


@contextmanager
def _ends_on_signals() -> Iterator[None]:
    from kvbench.run.interrupts import Interrupted, signals_end_runs

    try:
        with signals_end_runs():
            yield
    except Interrupted as exc:
        err.print(f"kvbench: crosscheck interrupted ({exc.name}); its temporary files are removed")
        raise typer.Exit(exc.exit_code) from None


@crosscheck_app.command("dram")
def crosscheck_dram(
    size: Annotated[str, typer.Option(help="buffer size")] = "256MiB",
    repeats: Annotated[int, typer.Option(help="mbw iterations")] = 10,
    pages: Annotated[str, typer.Option(help="page sizes, comma-separated, each compared on its own: "
                                       "base | thp | hugetlb-2M | hugetlb-1G")] = "base,thp",
) -> None:
    """mbw (MEMCPY, MCBLOCK) and numpy copyto next to kvbench dram.copy, single-threaded, every side's
    buffers of one page size at a time (a copy on other pages is another case)."""
    from kvbench.crosscheck.dram import crosscheck_dram as run_crosscheck
    from kvbench.memory.pages import PAGES
    from kvbench.report.crosscheck import render
    from kvbench.units import parse_size

    asked = [p.strip() for p in pages.split(",") if p.strip()]
    bad = [p for p in asked if p not in PAGES]
    if bad or not asked:
        raise BadInput(f"bad --pages '{pages}': give one or more of {', '.join(PAGES)}, comma-separated")
    size_bytes, verdicts = parse_size(size, "--size"), []
    for page in dict.fromkeys(asked):
        with _ends_on_signals():
            figures = run_crosscheck(size_bytes, repeats, page)
        render(out, figures, f"dram.copy crosscheck, pages={page} on every side (single thread, GB/s = 1e9 B/s)")
        verdicts.append(crosscheck_verdict(figures, 0.95, label=f"pages={page}"))
    conclude(combine(verdicts))


@crosscheck_app.command("storage")
def crosscheck_storage(
    io_size: Annotated[str, typer.Option(help="bytes per I/O")] = "1MiB",
    depth: Annotated[int, typer.Option(help="I/Os in flight (fio iodepth = kvbench batch)")] = 32,
    file_size: Annotated[str, typer.Option(help="file size")] = "256MiB",
    path: Annotated[str | None, typer.Option(help="directory (default: system temp dir)")] = None,
    api: Annotated[str, typer.Option(help="engine on both sides: aio (fio libaio) | uring (fio io_uring)")] = "aio",
) -> None:
    """fio next to kvbench storage.read through NIXL POSIX: same directory, sizes, depth, engine, O_DIRECT."""
    import tempfile

    from kvbench.crosscheck.storage import crosscheck_storage as run_crosscheck
    from kvbench.memory.files import mount_of
    from kvbench.report.crosscheck import render
    from kvbench.units import parse_size

    if api not in ("aio", "uring"):
        raise BadInput(f"bad --api '{api}': choose aio or uring")
    directory = path or tempfile.gettempdir()
    if not Path(directory).is_dir():
        raise BadInput(f"bad --path '{directory}': not a directory")
    io_bytes, file_bytes = parse_size(io_size, "--io-size"), parse_size(file_size, "--file-size")
    # checked here, in the flags' own names (the benchmark would name its parameters: batch, io_size)
    if io_bytes < 1 or file_bytes < io_bytes:
        raise BadInput(f"bad --io-size {io_size} / --file-size {file_size}: each I/O must fit in the file")
    if not 1 <= depth <= file_bytes // io_bytes:
        raise BadInput(f"bad --depth {depth}: from 1 to {file_bytes // io_bytes} (the I/Os of --io-size {io_size} "
                       f"that --file-size {file_size} holds)")
    mount = mount_of(directory)  # the same number means little on tmpfs, overlay or an NVMe: say which it was
    with _ends_on_signals():
        figures = run_crosscheck(io_bytes, depth, file_bytes, directory, api)
    render(out, figures, f"storage.read crosscheck ({io_size}, depth {depth}, {api}, in {directory} on "
           f"{mount['fstype']} {mount['device']} mounted at {mount['mount']}, GB/s = 1e9 B/s)", goal=0.90)
    conclude(crosscheck_verdict(figures, 0.90))


@crosscheck_app.command("pcie")
def crosscheck_pcie(
    nvbandwidth_output: Annotated[str | None, typer.Option(
        help="read this nvbandwidth output (its four CE tests at --bufferSize 256, one run) instead of running "
             "nvbandwidth again")] = None,
) -> None:
    """nvbandwidth's copy-engine tests next to pcie.h2d / pcie.d2h and each direction of pcie.bidir,
    pinned 256 MiB (goal: within 3 %)."""
    from kvbench.crosscheck.pcie import crosscheck_pcie as run_crosscheck
    from kvbench.report.crosscheck import render

    output = None
    if nvbandwidth_output is not None:
        try:
            output = (nvbandwidth_output, Path(nvbandwidth_output).read_text(errors="replace"))
        except OSError as exc:
            raise BadInput(f"--nvbandwidth-output {nvbandwidth_output}: {exc.strerror or exc}") from None
    verdicts = []
    with _ends_on_signals():
        for figures in run_crosscheck(output):
            render(out, figures, "pcie crosscheck (GB/s = 1e9 B/s)", goal=0.97, goal_max=1.03)
            verdicts.append(crosscheck_verdict(figures, 0.97, 1.03, figures[0].name))
    conclude(combine(verdicts))


@crosscheck_app.command("net")
def crosscheck_net(
    tls: Annotated[str | None, typer.Option(help="UCX_TLS for both sides, e.g. cma,self (default: UCX chooses)")] = None,
    size: Annotated[list[str] | None, typer.Option(help="message sizes (default 1MiB and 64KiB)")] = None,
    iterations: Annotated[int | None, typer.Option(min=1, help="ucx_perftest messages (default: 2 GiB worth)")] = None,
    transport: Annotated[str, typer.Option(help="nixl (against ucx_perftest) | mooncake (against Mooncake's "
                                           "transfer_engine_bench)")] = "nixl",
    batch: Annotated[int, typer.Option(min=1, help="--transport mooncake: blocks per batch, both sides")] = 16,
    duration: Annotated[int, typer.Option(min=1, help="--transport mooncake: the tool's seconds")] = 5,
) -> None:
    """ucx_perftest ucp_put_bw on loopback next to net.write peer=local, at 1 MiB and 64 KiB; with
    --transport mooncake, Mooncake's transfer_engine_bench next to net.write transport=mooncake (goal:
    within 10 %)."""
    from kvbench.report.crosscheck import render
    from kvbench.units import parse_size

    if transport not in ("nixl", "mooncake"):
        raise BadInput(f"bad --transport '{transport}': choose nixl or mooncake")
    if transport == "mooncake" and (tls or iterations):
        raise BadInput("--tls and --iterations are ucx_perftest's: give them without --transport mooncake")
    sizes = tuple(parse_size(s, "--size") for s in size) if size else (1 << 20, 64 << 10)
    verdicts = []
    if transport == "mooncake":
        import tempfile

        from kvbench.crosscheck.mooncake import GOAL, GOAL_MAX, crosscheck_mooncake

        with _ends_on_signals(), tempfile.TemporaryDirectory(prefix="kvbench-mooncake-") as folder:
            for figures in crosscheck_mooncake(sizes, batch, duration, Path(folder)):
                render(out, figures, f"net.write transport=mooncake crosscheck (loopback, tcp, batch {batch}, one "
                       "submitting thread, GB/s = 1e9 B/s)", goal=GOAL, goal_max=GOAL_MAX)
                verdicts.append(crosscheck_verdict(figures, GOAL, GOAL_MAX, figures[0].name))
        conclude(combine(verdicts))
        return
    from kvbench.crosscheck.net import crosscheck_net as run_crosscheck

    with _ends_on_signals():
        for figures in run_crosscheck(sizes, tls=tls, iterations=iterations):
            render(out, figures, f"net.write crosscheck (loopback, UCX_TLS={tls or 'default'}, GB/s = 1e9 B/s)",
                   goal=None, no_goal="NIXL's request path, checked end to end, against ucx_perftest's bare puts; "
                   "shown, not judged")
            verdicts.append(crosscheck_verdict(figures, None, label=figures[0].name))
    conclude(combine(verdicts))
