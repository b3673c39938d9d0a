"""How much host memory a benchmark may take: recorded /proc and /sys trees of a plain host, a VM
whose RAM grows on demand, and containers under cgroup v1 and v2 limits."""

from pathlib import Path

import pytest

from kvbench.errors import BadInput
from kvbench.memory.headroom import HostMemory, host_headroom
from kvbench.memory.host import check_fits

GiB = 1 << 30


def tree(tmp_path: Path, total: int, available: int, firmware: list[tuple[int, int, str]] = (),
         cgroup: str = "0::/\n", files: dict[str, str] | None = None) -> str:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/meminfo").write_text(f"MemTotal: {total // 1024} kB\nMemFree: {available // 1024} kB\n"
                                           f"MemAvailable: {available // 1024} kB\n")
    (tmp_path / "proc/self/cgroup").write_text(cgroup)
    for i, (start, end, kind) in enumerate(firmware):
        entry = tmp_path / f"sys/firmware/memmap/{i}"
        entry.mkdir(parents=True)
        (entry / "start").write_text(f"{start:#x}\n")
        (entry / "end").write_text(f"{end:#x}\n")
        (entry / "type").write_text(f"{kind}\n")
    for name, text in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def test_a_plain_host_offers_its_memavailable(tmp_path):
    root = tree(tmp_path, 64 * GiB, 60 * GiB, [(0, 64 * GiB - 1, "System RAM")])
    assert host_headroom(root) == HostMemory(60 * GiB, "MemAvailable")


def test_a_vm_whose_ram_grows_on_demand_offers_its_firmware_ram_less_what_is_in_use(tmp_path):
    # the Firecracker GPU host: 128 GiB by the firmware map, MemTotal 8 GiB at start, 6 GiB available
    root = tree(tmp_path, 8 * GiB, 6 * GiB, [(0, 0xBFFFFFFF, "System RAM"), (0xC0000000, 0xFFFFFFFF, "Reserved"),
                                             (1 << 32, (1 << 32) + 125 * GiB - 1, "System RAM")])
    room = host_headroom(root)
    assert room.available_bytes == 128 * GiB - 2 * GiB
    assert "grows on demand" in room.basis
    check_fits(4 * GiB, "pinned", room)  # a few GiB of pinned memory is not refused there
    with pytest.raises(BadInput, match="larger than 90% of the"):
        check_fits(200 * GiB, "pinned", room)


def test_a_cgroup_v2_limit_is_respected_and_reclaimable_cache_not_counted(tmp_path):
    root = tree(tmp_path, 64 * GiB, 60 * GiB, cgroup="0::/job/step\n", files={
        "sys/fs/cgroup/job/memory.max": f"{8 * GiB}\n",
        "sys/fs/cgroup/job/memory.current": f"{3 * GiB}\n",
        "sys/fs/cgroup/job/memory.stat": f"anon 1\ninactive_file {1 * GiB}\n",
        "sys/fs/cgroup/job/step/memory.max": "max\n",
    })
    room = host_headroom(root)
    assert room.available_bytes == 8 * GiB - 2 * GiB and "memory.max" in room.basis
    with pytest.raises(BadInput, match=r"memory.max"):
        check_fits(6 * GiB, "pageable", room)


def test_a_cgroup_v1_limit_is_respected(tmp_path):
    root = tree(tmp_path, 64 * GiB, 60 * GiB, cgroup="4:memory:/slurm/job1\n3:cpu:/\n", files={
        "sys/fs/cgroup/memory/slurm/job1/memory.limit_in_bytes": f"{4 * GiB}\n",
        "sys/fs/cgroup/memory/slurm/job1/memory.usage_in_bytes": f"{1 * GiB}\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",  # the root: no limit
    })
    assert host_headroom(root).available_bytes == 3 * GiB


def test_unreadable_memory_facts_refuse_nothing(tmp_path):
    assert host_headroom(str(tmp_path)).available_bytes is None
    check_fits(1 << 50, "pageable", HostMemory(None, "unknown"))
