"""Four hosts on one switch, made of network namespaces: a hub namespace holds a bridge, each node
namespace one end of a veth pair whose other end is on the bridge. Addresses live only inside these
namespaces (10.231.7.0/24); every name carries the test process's pid, and everything is deleted
when the fixture ends. Each node resolves the others' host names through its own
/etc/netns/NAME/hosts, and each rank runs in a UTS namespace of its own with its node's host name,
as four real hosts would."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

SUBNET = "10.231.7"
# A small, quick case: 8 × 64 KiB per request, few short samples (CI has a 15-minute goal)
SUITE = """name = "cluster-test"
[settings]
samples = 5
min_sample_s = 0.002
warmup_s = 0
precision = 0.5
max_time_s = 2
"""


@dataclass
class Nodes:
    tag: str
    names: list[str]  # namespace names
    hosts: list[str]  # host names
    addresses: list[str]

    def launch(self, i: int, env: dict[str, str], args: list[str], run_args: list[str]) -> subprocess.Popen:
        """`python -m kvbench.cluster.launch` in node i's namespace, under its own host name."""
        return self.run(i, env, [sys.executable, "-m", "kvbench.cluster.launch", *args, "--", *run_args])

    def run(self, i: int, env: dict[str, str], command: list[str]) -> subprocess.Popen:
        """`command` in node i's namespace, under its own host name, with none of this process's
        launcher variables."""
        script = 'hostname "$0" && exec "$@"'
        cmd = ["ip", "netns", "exec", self.names[i], "unshare", "--uts", "sh", "-c", script, self.hosts[i], *command]
        base = {k: v for k, v in os.environ.items() if k != "UCX_LOG_FILE" and not k.startswith(
            ("RANK", "WORLD_SIZE", "MASTER_", "LOCAL_RANK", "SLURM_", "OMPI_", "PMI_"))}
        return subprocess.Popen(cmd, env={**base, "UCX_TLS": "tcp,self", "PYTHONPATH": str(REPO), **env}, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True)


def make_nodes(count: int) -> Nodes:
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("iproute2 (ip) or unshare is not installed")
    probe = _run(["unshare", "--uts", "true"])
    if probe.returncode != 0:
        pytest.skip(f"a UTS namespace cannot be made here (unshare --uts): {probe.stderr.strip()[:120]}")
    tag = f"k{os.getpid()}"
    hub, names = f"{tag}h", [f"{tag}n{i}" for i in range(count)]
    nodes = Nodes(tag, names, [f"{tag}n{i}" for i in range(count)], [f"{SUBNET}.{i + 1}" for i in range(count)])
    setup = [["ip", "netns", "add", hub], ["ip", "-n", hub, "link", "add", "br0", "type", "bridge"],
             ["ip", "-n", hub, "link", "set", "br0", "up"]]
    for i, ns in enumerate(names):
        setup += [["ip", "netns", "add", ns],
                  ["ip", "link", "add", f"{tag}v{i}", "netns", ns, "type", "veth", "peer", "name", f"{tag}p{i}",
                   "netns", hub],
                  ["ip", "-n", hub, "link", "set", f"{tag}p{i}", "master", "br0", "up"],
                  ["ip", "-n", ns, "addr", "add", f"{nodes.addresses[i]}/24", "dev", f"{tag}v{i}"],
                  ["ip", "-n", ns, "link", "set", f"{tag}v{i}", "up"], ["ip", "-n", ns, "link", "set", "lo", "up"]]
    for command in setup:
        made = _run(command)
        if made.returncode != 0:
            delete_nodes(nodes)
            pytest.skip(f"network namespaces cannot be made here: {' '.join(command)}: {made.stderr.strip()[:120]}")
    hosts = "127.0.0.1 localhost\n" + "".join(f"{a} {h}\n" for a, h in zip(nodes.addresses, nodes.hosts))
    for ns in names:
        folder = Path("/etc/netns") / ns
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "hosts").write_text(hosts)
    return nodes


def delete_nodes(nodes: Nodes) -> None:
    for ns in [*nodes.names, f"{nodes.tag}h"]:
        _run(["ip", "netns", "delete", ns])
        shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)


def finish(procs: list[subprocess.Popen], within_s: float) -> list[tuple[int, str]]:
    """(status, stderr) of each rank; any still running after `within_s` is killed and the test fails."""
    deadline = time.monotonic() + within_s
    out = []
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
            _, err = proc.communicate(timeout=30)
            pytest.fail(f"a rank still ran after {within_s:.0f} s: {err[-1500:]}")
        out.append((proc.returncode, err))
    return out


def stored(db: Path) -> list[dict]:
    """Every stored result: bench, params, status, verified, reason, extra, gbps (median)."""
    import json

    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT bench, params, status, verified, reason, extra, gbps_median FROM result").fetchall()
    return [{"bench": b, "params": json.loads(p), "status": s, "verified": v, "reason": r, "extra": json.loads(e),
             "gbps": g} for b, p, s, v, r, e, g in rows]


# kv.restore from each pair's target: a small model and few tokens, 4 blocks of 2 MiB from a pool of 16
KV_SWEEP = '[[bench]]\nid = "kv.restore"\n[bench.params]\nmodel = "Llama-3.1-8B"\ntokens = 64\n'
KV_POOL_BYTES = 16 * 2 * 2**20


def check_restores(results: list[dict], addresses: list[str], hosts: list[str], pattern: str) -> list[dict]:
    """The kv.restore results, each ok, verified, read from the pool its target allocated when asked:
    the bytes leave the target, so its host is the pair's source."""
    kv = [r for r in results if r["bench"] == "kv.restore"]
    assert kv
    for r in kv:
        assert r["status"] == "ok" and r["verified"], (r["params"], r["reason"])
        params, record = r["params"], r["extra"]["cluster"]
        assert params["src"] == "remote" and params["peer"] == "remote" and record["pattern"] == pattern
        target = addresses.index(params["peer_addr"])
        assert record["src_rank"] == target and params["src_host"] == hosts[target]
        assert params["dst_host"] == hosts[record["dst_rank"]] != params["src_host"]
        source = r["extra"]["buffers"]["src"]
        assert source["peer"] == "remote" and source["size_bytes"] == KV_POOL_BYTES  # not --block-size x --batch
    return kv
