"""A one-node Slurm of the distribution's own daemons (munged, slurmctld, slurmd), private to one test:
its configuration, state, sockets and logs in a temporary folder, its ports free ones on 127.0.0.1, its
node this host with as many CPUs as it has (declaring more leaves the node `inval`; srun -O overcommits).
Every daemon is stopped by its pid when the fixture ends. Where Slurm is not installed or will not
start, the test skips with the reason (.ci/run installs slurm-wlm and munge where apt-get can)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kvbench.peers.protocol import free_port

DAEMONS = ("munged", "slurmctld", "slurmd")
CONF = """ClusterName=kvbench
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class Slurm:
    folder: Path
    env: dict[str, str]
    pids: list[int] = field(default_factory=list)

    def log_tail(self) -> str:
        return "\n".join(f"{name}: {(self.folder / f'{name}.log').read_text(errors='replace')[-800:]}"
                         for name in DAEMONS if (self.folder / f"{name}.log").exists())


def _tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def start_slurm(folder: Path) -> Slurm:
    missing = [n for n in (*DAEMONS, "srun", "sinfo") if _tool(n) is None]
    if missing:
        pytest.skip(f"Slurm is not installed here ({', '.join(missing)} missing; .ci/run installs slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("a private Slurm needs root here (slurmd runs each task as its user)")
    host = socket.gethostname().split(".")[0]
    for sub in ("state", "spool", "munge"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(folder / "munge", 0o700)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    sock = folder / "munge" / "munge.sock"
    conf = folder / "slurm.conf"
    conf.write_text(CONF.format(host=host, ctld_port=free_port(), d_port=free_port(), sock=sock, dir=folder,
                                cpus=os.cpu_count() or 1))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    slurm = Slurm(folder, env)
    munged = subprocess.run([_tool("munged"), "--force", "--key-file", str(key), "--socket", str(sock),
                             "--pid-file", str(folder / "munged.pid"), "--log-file", str(folder / "munged.log"),
                             "--seed-file", str(folder / "munge" / "munge.seed")], capture_output=True, text=True)
    if munged.returncode != 0:
        pytest.skip(f"munged does not start here: {munged.stderr.strip()[-200:]}")
    slurm.pids.append(int((folder / "munged.pid").read_text()))
    for daemon in ("slurmctld", "slurmd"):
        started = subprocess.run([_tool(daemon), "-f", str(conf)], env=env, capture_output=True, text=True)
        if started.returncode != 0:
            stop_slurm(slurm)
            pytest.skip(f"{daemon} does not start here: {started.stderr.strip()[-200:]}")
        pid_file = folder / f"{daemon}.pid"
        for _ in range(100):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            time.sleep(0.1)
        if pid_file.exists() and pid_file.read_text().strip():
            slurm.pids.append(int(pid_file.read_text()))
    deadline = time.monotonic() + 120
    state = ""
    while time.monotonic() < deadline:
        shown = subprocess.run([_tool("sinfo"), "-h", "-o", "%t"], env=env, capture_output=True, text=True)
        state = (shown.stdout or shown.stderr).strip()
        if state.startswith(("idle", "mix")):
            return slurm
        time.sleep(1)
    tail = slurm.log_tail()
    stop_slurm(slurm)
    pytest.skip(f"the one-node Slurm did not come up within 120 s (node state '{state}'): {tail[-400:]}")


def stop_slurm(slurm: Slurm) -> None:
    """Stop the daemons this fixture started, by their pids (slurmd first, munged last)."""
    for pid in reversed(slurm.pids):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
