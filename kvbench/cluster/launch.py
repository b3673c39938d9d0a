"""N ranks, started by an existing launcher: every rank serves a NIXL target and measures its pairs of a pattern.

    srun -N4 --ntasks-per-node=1 python -m kvbench.cluster.launch -- --bench net.write --bench net.read
    torchrun --nnodes 4 --nproc-per-node 1 --node-rank N --master-addr HOST0 --master-port 29500 \\
        -m kvbench.cluster.launch --pattern ring -- --bench net.write
    mpirun -np 4 -H a,b,c,d python -m kvbench.cluster.launch --peer-addr a --pattern incast:3 -- --bench net.write

Rank and world size come from the launcher's environment (kvbench/cluster/launchers.py); rank 0's address or
host name from --peer-addr, MASTER_ADDR or SLURM_JOB_NODELIST. Each rank's target listens on --port
(plus its local rank, so ranks sharing a host do not collide); rank 0's also holds the rendezvous
(the roster and the barriers between rounds). Everything after `--` is what `kvbench run` takes
(--suite, --bench, --set, --db, --json, --tag, --samples); `{rank}` in --json is replaced by the rank.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from kvbench.cluster.argparse_oneline import Parser, port, positive_int, samples, seconds
from kvbench.errors import BadInput, CheckFailed, one_line
from kvbench.redact import redact
from kvbench.units import parse_size


def main(argv: list[str] | None = None) -> int:
    """This rank's work; kvbench's errors as one line and their status, a signal as 128 + its number
    (this rank's target stopped on the way out)."""
    from kvbench.run.interrupts import Interrupted, signals_end_runs

    # NIXL's own C++ log lines are not this rank's words: while rank 0 starts, each refused ask for its
    # metadata is an ERROR line ("getsockopt gave error ... Connection refused"), and a peer killed mid-run
    # another ("genNotif: ... NIXL_ERR_REMOTE_DISCONNECT"). kvbench says what failed in one line of its own;
    # a NIXL_LOG_LEVEL the user sets still wins.
    os.environ.setdefault("NIXL_LOG_LEVEL", "FATAL")
    try:
        with signals_end_runs():
            return _main(sys.argv[1:] if argv is None else argv)
    except (BadInput, CheckFailed) as exc:
        print(redact(one_line(f"python -m kvbench.cluster.launch: error: {exc}")), file=sys.stderr)
        return exc.exit_code
    except Interrupted as exc:  # a run that had begun said so itself (run_and_show); a start says it here
        print(f"python -m kvbench.cluster.launch: interrupted ({exc.name}); this rank stopped", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _main(argv: list[str]) -> int:
    from kvbench.benches.params import resolve_address
    from kvbench.cluster.launchers import launch_id, local_rank, own_address, rank0_host, rank_and_world
    from kvbench.cluster.rank import peer_cases
    from kvbench.cluster.schedule import parse_pattern
    from kvbench.memory.kinds import parse_kind
    from kvbench.store import open_store

    own, run_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = Parser(prog="python -m kvbench.cluster.launch", description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--peer-addr", help="rank 0's address or host name (default: MASTER_ADDR, else the first "
                        "host of SLURM_JOB_NODELIST)")
    parser.add_argument("--port", type=port, default=5555, help="rank 0's NIXL listener port (rank r's: this plus "
                        "its local rank)")
    parser.add_argument("--pattern", default="pairs", help="pairs | ring | incast:K | kbatch:K")
    parser.add_argument("--block-size", default="1MiB")
    parser.add_argument("--batch", type=positive_int, default=64)
    parser.add_argument("--memory", default="pageable", help="this rank's target memory kind")
    parser.add_argument("--timeout", type=seconds, default=120.0,
                        help="seconds any wait lasts: for rank 0, a peer, a rank that went silent")
    args = parser.parse_args(own)
    size = parse_size(args.block_size, "block_size") * args.batch
    parse_kind(args.memory)
    # the arguments first, then the launcher's environment: every rank refuses a bad one before any wait
    request = _request(_run_parser().parse_args(run_args), {
        "peer": "remote", "block_size": args.block_size, "batch": args.batch, "timeout_s": max(1, int(args.timeout))})
    peer_cases(request)  # a bad --bench, --set or --suite
    rank, world = rank_and_world()
    pattern = parse_pattern(args.pattern, world)
    label, value = rank0_host(args.peer_addr)
    address = resolve_address(value, named := f"{label} '{value}'")
    addr = own_address(address, args.port, named)  # this host's interface toward rank 0 (no route: refused)
    json_out = request_json.replace("{rank}", str(rank)) if (request_json := _json_of(run_args)) else None
    open_store(request.db).dispose()  # a database this rank cannot open or write: refused before it waits for anyone
    listen = args.port + (local_rank() if rank else 0)
    entry = {"rank": rank, "addr": addr, "port": listen, "host": socket.gethostname(), "local_rank": local_rank(),
             "world": world, "launch": launch_id()}
    target = _start_target(rank, listen, size, args.memory, args.timeout, world)
    finished = False
    try:
        status = _run_share(request, json_out, entry, address, args.port, args.timeout, pattern, world, target)
        finished = status == 0
        return status
    except CheckFailed:
        finished = True  # failed cases: the share ran to its end
        raise
    finally:
        _stop_target(target, rank == 0 and finished, args.timeout)


def _run_parser() -> Parser:
    """The arguments after `--` (what `kvbench run` takes)."""
    parser = Parser(prog="python -m kvbench.cluster.launch ... --", add_help=False)
    parser.add_argument("--suite")
    parser.add_argument("--bench", action="append", default=[])
    parser.add_argument("--set", action="append", default=[], dest="set_")
    parser.add_argument("--db")
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--tag", action="append", default=[])
    parser.add_argument("--samples", type=samples)
    return parser


def _json_of(run_args: list[str]) -> str | None:
    return _run_parser().parse_args(run_args).json_out


def _request(given, settings: dict):
    """`kvbench run`'s arguments as a request, the peer's settings laid over them (those a selected
    benchmark takes); net.write and net.read when no benchmark or suite is named."""
    from kvbench.benches.params import coerce_text
    from kvbench.cli.common import check_writable, pairs
    from kvbench.cluster.rank import launcher_overrides
    from kvbench.run.suite_run import RunRequest

    check_writable(given.json_out, "--json", given.db)
    benches = tuple(given.bench) or (() if given.suite else ("net.write", "net.read"))
    overrides = ({k: coerce_text(v) for k, v in pairs(given.set_, "--set").items()}
                 | launcher_overrides(benches, given.suite, settings))
    return RunRequest(suite=given.suite, benches=benches, overrides=overrides, tags=pairs(given.tag, "--tag"),
                      samples=given.samples, db=given.db)


def _start_target(rank: int, listen: int, size: int, memory: str, timeout_s: float, world: int) -> subprocess.Popen:
    """This rank's target (python -m kvbench.cluster.peer), serving every initiator that comes; rank 0's also
    holds the rendezvous. Started with signals held, so a signal cannot leave it unknown."""
    from kvbench.cluster.launchers import launch_id
    from kvbench.cluster.rendezvous import target_name
    from kvbench.peers.protocol import stderr_file
    from kvbench.run.interrupts import signals_deferred

    # --parent: a target whose launch process died before it started must not serve on (it held the port)
    cmd = [sys.executable, "-m", "kvbench.cluster.peer", "--name", target_name(rank), "--port", str(listen), "--size", str(size),
           "--memory", memory, "--timeout", str(timeout_s), "--parent", str(os.getpid()),
           *(["--world", str(world), "--launch", launch_id()] if rank == 0 else ["--stay"])]
    env = {k: v for k, v in os.environ.items() if k != "UCX_PROTO_INFO"}  # its tables would fill the pipe
    with signals_deferred():
        target = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=(log := stderr_file()),
                                  env={**env, "NIXL_LOG_LEVEL": "WARN"})
    target.stderr = log  # read once it has exited; a pipe would fill over a long run and stop it
    return target


def _stop_target(target: subprocess.Popen, wait: bool, timeout_s: float) -> None:
    """Rank 0's target, after a finished share (`wait`), ends by itself once every rank has left or
    is dead (within the timeout); every other target is stopped at once."""
    if wait and target.poll() is None:
        try:
            target.wait(timeout=timeout_s + 10)
        except subprocess.TimeoutExpired:
            pass
    if target.poll() is None:
        target.terminate()
        try:
            target.wait(timeout=10)
        except subprocess.TimeoutExpired:
            target.kill()
            target.wait(timeout=10)
    if target.stderr:
        target.stderr.close()


def _run_share(request, json_out: str | None, entry: dict, address: str, port: int, timeout_s: float, pattern,
               world: int, target: subprocess.Popen) -> int:
    """Join the rendezvous, then run this rank's share of `pattern` (kvbench/cluster/rank.py); say DONE to
    rank 0 when it ran to its end (a rank stopped by a signal stays silent, so its pairs are
    recorded failed by the others)."""
    from kvbench.cluster.rendezvous import Rendezvous

    rendezvous = Rendezvous(entry, address, port, timeout_s)
    try:
        return _share(rendezvous, request, json_out, entry, timeout_s, pattern, world, target)
    finally:
        rendezvous.close()  # whatever ended the share: the thread is out of NIXL before the process exits


def _share(rendezvous, request, json_out: str | None, entry: dict, timeout_s: float, pattern, world: int,
           target: subprocess.Popen) -> int:
    import dataclasses

    import typer

    from kvbench.cli.run import run_and_show
    from kvbench.cluster.rank import RankShare, cluster_tags
    from kvbench.cluster.rendezvous import RendezvousLost
    from kvbench.cluster.schedule import schedule
    from kvbench.peers.protocol import last_line

    try:
        roster = rendezvous.join(alive=lambda: target.poll() is None)  # a target that ended is news at once
    except RendezvousLost as exc:
        if target.poll() is not None:  # this rank's own target could not start: that is the news
            tail = last_line(target.stderr)
            said = f"this rank's target exited with status {target.returncode}{': ' + tail if tail else ''}"
            raise (BadInput if target.returncode == 2 else CheckFailed)(said) from None  # 2: its input (a taken --port)
        raise CheckFailed(str(exc)) from None
    if entry["rank"] in roster["dead"]:
        raise CheckFailed(f"rank 0 gave up waiting for rank {entry['rank']} (--timeout {timeout_s:g} s)")
    cluster = str(roster.get("cluster") or "")
    # every rank's run carries the launch's one cluster id: readers take the N runs as one (cluster:<id>)
    request = dataclasses.replace(request, tags={**request.tags, **cluster_tags(cluster, entry["rank"], world)})
    share = RankShare(entry["rank"], rendezvous, roster["ranks"], schedule(pattern, world), str(pattern),
                      {r: -1 for r in roster["dead"]}, cluster)
    if entry["rank"] == 0:
        print(f"cluster run {cluster}: read it whole as cluster:{cluster} (kvbench fleet --pairs --run "
              f"cluster:{cluster})", file=sys.stderr)
    try:
        run_and_show(request, json_out, runner=share)
    except typer.Exit as exc:  # a signal: run_and_show printed its one line; its status, no traceback
        return exc.exit_code
    except CheckFailed:
        rendezvous.leave()
        raise
    rendezvous.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main())
