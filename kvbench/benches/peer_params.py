"""The parameters of a benchmark that reaches a peer a launcher started (`peer=remote`), declared
once: net.write and net.read take them, and so does kv.restore (its pool on the peer, src=remote).
`python -m kvbench.cluster.launch` sets them for each pair of a pattern (kvbench/cluster/rank.py)."""

from __future__ import annotations

from dataclasses import replace

from kvbench.benches.params import Param

REMOTE_PEER = {
    "peer_addr": Param("address", "127.0.0.1", "peer=remote: the peer host's address"),
    "peer_port": Param("int", 5555, "peer=remote: the peer's NIXL listener port", minimum=1, maximum=65535),
    "peer_name": Param("text", "kvbench-target", "peer=remote: the peer agent's name"),
    "timeout_s": Param("int", 30, "seconds to wait for the peer", minimum=1),
}

# set by python -m kvbench.cluster.launch: each directed pair of hosts is a case of its own (compare, fleet --pairs)
PAIR_HOSTS = {
    "src_host": Param("text", "", "the host the bytes leave (set by python -m kvbench.cluster.launch)", added=True),
    "dst_host": Param("text", "", "the host the bytes land on (set by python -m kvbench.cluster.launch)", added=True),
}


def added_later(params: dict[str, Param]) -> dict[str, Param]:
    """`params` for a benchmark that had results stored before it took them: at their defaults they
    stay out of its cases' identity (Param.added), so its earlier cases stay the same cases."""
    return {name: replace(spec, added=True) for name, spec in params.items()}
