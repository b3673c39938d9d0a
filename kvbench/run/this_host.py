"""This host as kvbench sees it: the hardware facts (kvbench/hardware, which asks sysfs, NVML and
DMI) with CUDA's device numbering laid over NVML's (kvbench/backends/cuda, which asks CUDA).

The hardware package stays a leaf that never imports a backend; this is where the two meet.
"""

from __future__ import annotations

from kvbench.hardware.facts import HostFacts
from kvbench.hardware.fingerprint import collect_facts


def host_facts(gpus: bool = True, dram: bool = True) -> HostFacts:
    """Everything kvbench knows about this host; GPUs carry their CUDA number where CUDA works."""
    from kvbench.backends.cuda import cuda_index_by_bus

    return collect_facts(gpus=gpus, dram=dram, cuda_index=cuda_index_by_bus if gpus else None)
