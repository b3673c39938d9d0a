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


def test_signs_that_a_vm_s_memory_grows_as_it_is_used(tmp_path):
    from kvbench.memory.headroom import growable_memory

    plain = tree(tmp_path / "plain", 64 * GiB, 60 * GiB, files={"sys/bus/virtio/drivers/virtio_balloon/bind": ""})
    assert growable_memory(plain) is None  # the driver loaded, no device bound to it
    vm = tree(tmp_path / "vm", 8 * GiB, GiB, files={
        "sys/bus/virtio/drivers/virtio_balloon/virtio0/x": "", "sys/bus/virtio/drivers/virtio_mem/virtio3/x": "",
        "sys/devices/system/memory/block_size_bytes": "8000000\n",
        "sys/devices/system/memory/memory0/state": "online\n", "sys/devices/system/memory/memory1/state": "offline\n",
        "sys/devices/system/memory/memory2/state": "offline\n"})
    assert growable_memory(vm) == ("a virtio balloon is bound; a virtio-mem device is bound; "
                                   f"2 memory block(s) ({2 * 0x8000000} bytes) offline")


@pytest.mark.parametrize("grows_after_touch", [True, False])
def test_on_a_vm_that_grows_the_guard_touches_memory_once_then_reads_again(monkeypatch, grows_after_touch):
    """Issue 43.11: a 1.6 GB buffer refused against 0.78 GB MemAvailable passed a minute later."""
    from kvbench.memory import host

    reads = iter([HostMemory(780_000_000, "MemAvailable"),
                  HostMemory(8 * GiB if grows_after_touch else 790_000_000, "MemAvailable")])
    touched = []
    monkeypatch.setattr(host, "host_headroom", lambda: next(reads))
    monkeypatch.setattr(host, "growable_memory", lambda: "a virtio balloon is bound")
    monkeypatch.setattr(host, "_touch", touched.append)
    monkeypatch.setattr(host, "meminfo", lambda: {"MemAvailable": 780_000_000})
    if grows_after_touch:
        check_fits(1_600_000_000, "pageable")
    else:
        with pytest.raises(BadInput, match=r"choose a smaller size, or retry: this VM's memory can still grow as it "
                                           r"is used \(a virtio balloon is bound\)"):
            check_fits(1_600_000_000, "pageable")
    assert touched == [int(0.9 * 780_000_000)]


def test_without_signs_of_growth_the_guard_refuses_at_once_and_touches_nothing(monkeypatch):
    from kvbench.memory import host

    monkeypatch.setattr(host, "host_headroom", lambda: HostMemory(780_000_000, "MemAvailable"))
    monkeypatch.setattr(host, "growable_memory", lambda: None)
    monkeypatch.setattr(host, "_touch", lambda n: pytest.fail("touched memory on a box that does not grow"))
    with pytest.raises(BadInput) as refused:
        check_fits(1_600_000_000, "pageable")
    assert str(refused.value).endswith("(MemAvailable); choose a smaller size")


def test_touching_writes_every_page_and_gives_it_back():
    from kvbench.memory.host import _touch

    _touch(4 << 20)
    _touch(0)


def test_a_buffer_no_growth_could_hold_is_refused_at_once_without_touching(monkeypatch):
    """A VM that grows only up to its firmware RAM (a balloon): a 4 TiB ask cannot fit however the
    balloon deflates, so nothing is touched (touching 90 % of a box's free memory took 40 s here)."""
    from kvbench.memory import host

    monkeypatch.setattr(host, "host_headroom", lambda: HostMemory(780_000_000, "MemAvailable"))
    monkeypatch.setattr(host, "growable_memory", lambda: "a virtio balloon is bound")
    monkeypatch.setattr(host, "growth_ceiling", lambda: 64 * GiB)
    monkeypatch.setattr(host, "_touch", lambda n: pytest.fail("touched memory for a buffer no growth could hold"))
    with pytest.raises(BadInput, match=rf"and than 90% of the {64 * GiB} bytes this VM's memory could grow to "
                                       r"\(a virtio balloon is bound\); choose a smaller size"):
        check_fits(1 << 42, "pageable")


def test_the_growth_ceiling_is_the_firmware_ram_and_offline_blocks_unknown_with_virtio_mem(tmp_path):
    from kvbench.memory.headroom import growth_ceiling

    firmware = [(0, 16 * GiB - 1, "System RAM")]
    files = {"sys/devices/system/memory/block_size_bytes": "8000000\n",
             "sys/devices/system/memory/memory40/state": "offline\n",
             "sys/devices/system/memory/memory1/state": "online\n"}
    assert growth_ceiling(tree(tmp_path / "vm", 8 * GiB, 6 * GiB, firmware, files=files)) == 16 * GiB + 0x8000000
    with_mem = {**files, "sys/bus/virtio/drivers/virtio_mem/virtio3/x": ""}
    assert growth_ceiling(tree(tmp_path / "mem", 8 * GiB, 6 * GiB, firmware, files=with_mem)) is None
