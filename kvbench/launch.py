"""Two hosts, started by an existing launcher: rank 0 is the target, rank 1 measures.

    srun -N2 --ntasks-per-node=1 python -m kvbench.launch --peer-addr HOST0 -- --bench net.write --bench net.read
    torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint HOST0:29500 \\
        -m kvbench.launch -- --bench net.write

The rank comes from RANK (torchrun), SLURM_PROCID (srun), OMPI_COMM_WORLD_RANK or PMI_RANK, checked
against the world size beside it; rank 0's address or host name from --peer-addr or MASTER_ADDR.
Metadata goes through NIXL's listener on rank 0 (port --port).
Everything after `--` is what `kvbench run` takes (--suite, --bench, --set, --db, --json, --tag,
--samples) on rank 1, which runs it with `peer=remote`, `peer_addr`, `peer_port`, `block_size`,
`batch` and `timeout_s` set to match rank 0.
"""

from __future__ import annotations

import os
import sys

from kvbench.argparse_oneline import Parser, port, positive_int, seconds
from kvbench.errors import BadInput, CheckFailed, one_line
from kvbench.redact import redact
from kvbench.units import parse_size


# Each launcher's rank variable beside its world-size variable, in the order they are read.
RANK_VARS = (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
             ("PMI_RANK", "PMI_SIZE"))
WORLD = 2  # rank 0 serves, rank 1 measures


def _number(var: str, what: str) -> int:
    try:
        value = int(os.environ[var])
    except ValueError:
        raise BadInput(f"bad {var} '{os.environ[var]}': expected {what}") from None
    if value < 0:
        raise BadInput(f"bad {var} {value}: expected {what}")
    return value


def rank() -> int:
    """This process's rank (0 or 1) from the launcher's environment; a rank outside the world the
    launcher states (its size variable), or beyond the two this launcher runs, is refused."""
    for var, size_var in RANK_VARS:
        if var not in os.environ:
            continue
        value = _number(var, "a rank number (0 or 1)")
        if size_var in os.environ:
            size = _number(size_var, "the number of ranks (2)")
            if value >= size:
                raise BadInput(f"bad {var} {value}: {size_var}={size} gives ranks 0 to {size - 1}")
            if size != WORLD:
                raise BadInput(f"bad {size_var} {size}: python -m kvbench.launch runs exactly {WORLD} ranks "
                               "(rank 0 serves, rank 1 measures)")
        if value >= WORLD:
            raise BadInput(f"bad {var} {value}: python -m kvbench.launch runs ranks 0 and 1 only "
                           "(rank 0 serves, rank 1 measures)")
        return value
    raise BadInput("no rank in the environment (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK)")


def main(argv: list[str] | None = None) -> int:
    """Either rank's work; kvbench's errors as one line and their status, a signal as 128 + its number
    (rank 0's temporary files removed on the way out)."""
    from kvbench.interrupts import Interrupted, signals_end_runs

    try:
        with signals_end_runs():
            return _main(sys.argv[1:] if argv is None else argv)
    except (BadInput, CheckFailed) as exc:
        print(redact(one_line(f"python -m kvbench.launch: error: {exc}")), file=sys.stderr)
        return exc.exit_code
    except Interrupted as exc:  # a run that had begun said so itself (run_rank1); rank 0 and a start say it here
        print(f"python -m kvbench.launch: interrupted ({exc.name}); this rank stopped", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _main(argv: list[str]) -> int:
    from kvbench.peers.serve import serve

    own, run_args = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = Parser(prog="python -m kvbench.launch", description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--peer-addr", help="rank 0's address or host name (default: MASTER_ADDR)")
    parser.add_argument("--port", type=port, default=5555, help="rank 0's NIXL listener port")
    parser.add_argument("--block-size", default="1MiB")
    parser.add_argument("--batch", type=positive_int, default=64)
    parser.add_argument("--memory", default="pageable", help="rank 0's memory kind")
    parser.add_argument("--timeout", type=seconds, default=120.0, help="seconds rank 0 waits for rank 1")
    args = parser.parse_args(own)
    size = parse_size(args.block_size, "block_size") * args.batch
    if rank() == 0:
        _run_parser().parse_args(run_args)  # rank 1's arguments refused here too, not after a wait for it
        return serve("kvbench-target", args.port, "kvbench-init", None, None, size, args.memory,
                     seed=11, timeout_s=args.timeout)
    from kvbench.benches.params import resolve_address

    given, value = ("--peer-addr", args.peer_addr) if args.peer_addr else ("MASTER_ADDR", os.environ.get("MASTER_ADDR"))
    if not value:
        raise BadInput("give --peer-addr (rank 0's host) or set MASTER_ADDR")
    address = resolve_address(value, f"{given} '{value}'")
    return run_rank1(run_args, {"peer": "remote", "peer_addr": address, "peer_port": args.port,
                                "block_size": args.block_size, "batch": args.batch, "timeout_s": int(args.timeout)})


def _run_parser() -> Parser:
    """The arguments after `--` (what `kvbench run` takes); both ranks check them before any wait."""
    parser = Parser(prog="python -m kvbench.launch ... --", add_help=False)
    parser.add_argument("--suite")
    parser.add_argument("--bench", action="append", default=[])
    parser.add_argument("--set", action="append", default=[], dest="set_")
    parser.add_argument("--db")
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--tag", action="append", default=[])
    parser.add_argument("--samples", type=int)
    return parser


def run_rank1(run_args: list[str], settings: dict) -> int:
    """The measuring side: `kvbench run`'s arguments, with the peer's settings laid over them."""
    import typer

    from kvbench.benches.params import coerce_text
    from kvbench.cli.common import check_writable, pairs
    from kvbench.cli.run import run_and_show
    from kvbench.suite_run import RunRequest

    given = _run_parser().parse_args(run_args)
    check_writable(given.json_out, "--json", given.db)
    overrides = {k: coerce_text(v) for k, v in pairs(given.set_, "--set").items()} | settings
    request = RunRequest(suite=given.suite, benches=tuple(given.bench), overrides=overrides,
                         tags=pairs(given.tag, "--tag"), samples=given.samples, db=given.db)
    try:
        run_and_show(request, given.json_out)
    except typer.Exit as exc:  # a signal: run_and_show printed its one line; its status, no traceback
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
