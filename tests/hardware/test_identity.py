"""The host id: the same for as long as the box is, whatever drifts around it."""

from dataclasses import replace

import pytest

from kvbench.errors import BadInput
from kvbench.hardware import sysfs
from kvbench.hardware.facts import Dram, Link, Nic, PciDevice
from kvbench.hardware.identity import host_id, identity, same_box_by_older_facts
from tests.hardware.test_sysfs import ROOT
from tests.hardware.test_sysfs import _facts as h200

BOX = replace(h200(), system_id="a" * 32, system_id_source="machine-id")


@pytest.mark.parametrize("drift", [
    lambda f: replace(f, hostname="c0ffee1234ab"),  # a container's hostname is its id
    lambda f: replace(f, numa=tuple(replace(n, memory_bytes=(n.memory_bytes or 0) + (256 << 20)) for n in f.numa)),
    lambda f: replace(f, numa=tuple(replace(n, cpus="0-3") for n in f.numa)),
    lambda f: replace(f, dram=Dram(None, None, None, reason="dmidecode failed: ['/dev/mem: Permission denied']")),
    lambda f: replace(f, nics=tuple(replace(n, rate_gbit=200.0) for n in f.nics)),  # link speed
    lambda f: replace(f, pci=f.pci + (PciDevice("0000:ca:00.1", "0x15b3", "0x101e", "0x020000", 1,
                                                Link(5, 16, 5, 16)),)),  # a VF or a hot-plugged device
    lambda f: replace(f, nics=f.nics + (Nic("eth9", "ethernet", "0000:ca:00.1", 1, 100.0, virtual=True),)),
    lambda f: replace(f, kernel="6.12", gpus=tuple(replace(g, link=Link(1, 16, 5, 16)) for g in f.gpus)),
])
def test_what_drifts_does_not_change_the_id(drift):
    assert host_id(drift(BOX)) == host_id(BOX)


@pytest.mark.parametrize("change", [
    lambda f: replace(f, system_id="b" * 32),  # another machine
    lambda f: replace(f, gpus=f.gpus[:1]),  # a GPU taken out
    lambda f: replace(f, gpus=tuple(replace(g, uuid=g.uuid + "x") for g in f.gpus)),  # a GPU swapped
    lambda f: replace(f, nvme=()),  # a drive removed
    lambda f: replace(f, cpu_model="AMD EPYC 9654"),
])
def test_what_makes_it_another_box_changes_the_id(change):
    assert host_id(change(BOX)) != host_id(BOX)


def test_without_a_system_id_the_hostname_stands_in_and_says_so():
    bare = replace(BOX, system_id=None)
    assert identity(bare)["system"] == f"hostname:{bare.hostname}"
    assert host_id(replace(bare, hostname="other")) != host_id(bare)


def test_the_system_id_is_a_hash_never_the_machine_id_itself(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "machine-id").write_text("3d1219c7c4c5404aaa1f6d2a48adfda4\n")
    value, source = sysfs.system_identity(str(tmp_path))
    assert source == "machine-id" and len(value) == 32 and "3d1219c7" not in value
    dmi = tmp_path / "sys" / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    (dmi / "product_uuid").write_text("00000000-0000-0000-0000-000000000000\n")  # a placeholder: not an id
    (dmi / "product_serial").write_text("SN1234567\n")
    assert sysfs.system_identity(str(tmp_path))[1] == "DMI system serial"
    assert sysfs.system_identity(ROOT) == (None, None)


def test_a_label_names_the_host_instead(monkeypatch):
    monkeypatch.setenv("KVBENCH_HOST_ID", "rack7-node03")
    assert host_id(BOX) == "rack7-node03"
    monkeypatch.setenv("KVBENCH_HOST_ID", "no spaces please")
    with pytest.raises(BadInput, match="bad KVBENCH_HOST_ID 'no spaces please'"):
        host_id(BOX)


def test_an_older_kvbench_s_facts_of_this_box_are_recognised():
    older = {k: v for k, v in BOX.to_dict().items() if not k.startswith("system_id")}  # they had no system id
    assert same_box_by_older_facts(older, BOX)
    assert not same_box_by_older_facts({**older, "hostname": "other"}, BOX)
    assert not same_box_by_older_facts({**older, "gpus": older["gpus"][:1]}, BOX)
    assert not same_box_by_older_facts(BOX.to_dict(), BOX)  # this kvbench's facts: matched by id, not this way
