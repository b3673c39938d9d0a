"""What a launcher (torchrun, Slurm's srun, Open MPI's mpirun, a PMI launcher) tells each process:
its rank, the world size, its rank on its own host, and where rank 0 is.

    torchrun   RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR
    srun       SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NODELIST (rank 0 is on its first host)
    mpirun     OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
    PMI        PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
"""

from __future__ import annotations

import os
import re
import socket

from kvbench.errors import BadInput

# Each launcher's rank variable beside its world-size variable, in the order they are read.
RANK_VARS = (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
             ("PMI_RANK", "PMI_SIZE"))
LOCAL_RANK_VARS = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
# The most ranks one launch takes. Rank 0 holds the roster and every pair's schedule in memory (a world of
# N has N × (N - 1) directed pairs): 4096 ranks are 16.8 million pairs, already far past any cluster this
# suite measures pair by pair; a larger WORLD_SIZE is a typo or a launcher's bug, refused before any wait.
MAX_WORLD = 4096


def _number(var: str, what: str) -> int:
    try:
        value = int(os.environ[var])
    except ValueError:
        raise BadInput(f"bad {var} '{os.environ[var]}': expected {what}") from None
    if value < 0:
        raise BadInput(f"bad {var} {value}: expected {what}")
    return value


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) from the first launcher whose rank variable is set; a rank outside the
    world its size variable states, or a size variable missing, is refused in one line."""
    for var, size_var in RANK_VARS:
        if var not in os.environ:
            continue
        value = _number(var, "a rank number (0 or more)")
        if size_var not in os.environ:
            raise BadInput(f"{var} is set but {size_var} is not: the launcher must say how many ranks there are")
        size = _number(size_var, "the number of ranks (2 or more)")
        if size < 2:
            raise BadInput(f"bad {size_var} {size}: python -m kvbench.cluster.launch needs at least 2 ranks")
        if size > MAX_WORLD:
            raise BadInput(f"bad {size_var} {size}: python -m kvbench.cluster.launch takes at most {MAX_WORLD} ranks")
        if value >= size:
            raise BadInput(f"bad {var} {value}: {size_var}={size} gives ranks 0 to {size - 1}")
        return value, size
    raise BadInput("no rank in the environment (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK)")


# What names one launch, the same in every process it starts: Slurm's job and step, torchrun's run id
# (--rdzv-id; "none" when not given, so not telling), Open MPI's job id, PMIx's namespace.
LAUNCH_VARS = (("SLURM_JOB_ID", "SLURM_STEP_ID"), ("TORCHELASTIC_RUN_ID",), ("OMPI_MCA_ess_base_jobid",),
               ("PMIX_NAMESPACE",))


def launch_id() -> str:
    """The launcher's name for this launch (e.g. `slurm:1234.0`), "" when it gives none: rank 0 refuses a
    rank that names another launch."""
    for names in LAUNCH_VARS:
        values = [os.environ.get(n, "").strip() for n in names]
        if values[0] and values[0] != "none":
            return f"{names[0]}={'.'.join(v for v in values if v)}"
    return ""


def local_rank() -> int:
    """This process's rank among those on its host (0 when the launcher does not say)."""
    for var in LOCAL_RANK_VARS:
        if var in os.environ:
            return _number(var, "a local rank number (0 or more)")
    return 0


def first_host(nodelist: str) -> str:
    """The first host of a Slurm node list: `gpu-[003-007,010]-ib,cpu1` → `gpu-003-ib` (what
    `scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1` prints)."""
    first, depth = "", 0
    for c in nodelist.strip():
        if c == "," and depth == 0:
            break
        depth += (c == "[") - (c == "]")
        first += c
    try:
        # each bracket stands for a list of numbers and ranges: the first host takes the first number
        host = re.sub(r"\[([^\[\]]*)\]", lambda m: re.split(r"[-,]", m.group(1))[0], first)
    except re.error:  # pragma: no cover - the pattern is fixed
        host = ""
    if not host or any(c in host for c in "[],") or depth:
        raise BadInput(f"bad SLURM_JOB_NODELIST '{nodelist}': expected host names such as node[01-04]")
    return host


def rank0_host(given: str | None) -> tuple[str, str]:
    """(what named it, rank 0's address or host name): --peer-addr, MASTER_ADDR, or the first host
    of SLURM_JOB_NODELIST."""
    if given:
        return "--peer-addr", given
    if os.environ.get("MASTER_ADDR"):
        return "MASTER_ADDR", os.environ["MASTER_ADDR"]
    if os.environ.get("SLURM_JOB_NODELIST"):
        return "SLURM_JOB_NODELIST", first_host(os.environ["SLURM_JOB_NODELIST"])
    raise BadInput("give --peer-addr (rank 0's host) or set MASTER_ADDR (torchrun sets it; srun gives "
                   "SLURM_JOB_NODELIST)")


def own_address(toward: str, port: int, named: str = "rank 0's address") -> str:
    """The address of this host's interface that reaches `toward` (what the kernel's routes choose);
    no packet is sent. No route there is refused in one line naming `named` (what gave `toward`)."""
    family = socket.AF_INET6 if ":" in toward else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((toward, port))
        except OSError as exc:
            raise BadInput(f"bad {named}: this host has no route to {toward} ({exc.strerror})") from None
        return probe.getsockname()[0]
