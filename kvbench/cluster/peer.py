"""`python -m kvbench.cluster.peer`: the far side of a network benchmark in its own process (started by
kvbench for `peer=local`, or by a launcher on another host); see kvbench/cluster/serve.py."""

from __future__ import annotations

import sys

from kvbench.cluster.argparse_oneline import Parser, port
from kvbench.cluster.serve import serve
from kvbench.errors import BadInput, one_line
from kvbench.peers.protocol import PATTERN_SEED


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m kvbench.cluster.peer", description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--name", required=True)
    parser.add_argument("--port", type=port, required=True, help="this agent's NIXL listener port")
    parser.add_argument("--initiator", help="the initiator agent's name (with --initiator-addr; without it, any "
                        "initiator that says OPEN is served)")
    parser.add_argument("--initiator-addr", default=None,
                        help="reach the initiator here; omit to wait for it to connect (launcher mode)")
    parser.add_argument("--initiator-port", type=port, default=None)
    parser.add_argument("--size", type=int, required=True, help="buffer bytes")
    parser.add_argument("--memory", default="pageable")
    parser.add_argument("--seed", type=int, default=PATTERN_SEED)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the initiator")
    parser.add_argument("--world", type=int, default=0, help="also hold the rendezvous of this many ranks (rank 0)")
    parser.add_argument("--stay", action="store_true", help="serve until stopped, however long no initiator comes "
                        "(the other ranks of a cluster; their launcher stops them)")
    parser.add_argument("--launch", default="", help="with --world: rank 0's launcher job id; a rank of another "
                        "launch is refused")
    parser.add_argument("--parent", type=int, default=None, help="the pid of the process that started this one: "
                        "this one ends when it is gone, even if it died before this one started")
    args = parser.parse_args(argv)
    if args.initiator_addr and not args.initiator:
        parser.error("--initiator-addr needs --initiator")
    from kvbench.cluster.parent import die_with_parent, parent_gone

    die_with_parent()  # first: a parent that dies from now on takes this process with it
    if parent_gone(args.parent):  # it died before: nobody would ever stop this one
        print(f"python -m kvbench.cluster.peer: its parent (pid {args.parent}) is gone; not serving", file=sys.stderr)
        return 3
    try:
        return serve(args.name, args.port, args.initiator, args.initiator_addr, args.initiator_port, args.size,
                     args.memory, args.seed, args.timeout, args.world, args.stay, args.parent,
                     args.launch)
    except BadInput as exc:  # a taken --port, a bad --memory: one line (an initiator reads the last one)
        print(one_line(f"python -m kvbench.cluster.peer: error: {exc}"), file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
