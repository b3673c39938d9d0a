"""`accept` judges the machine as it was during the run (issue 36): on the stand-in's 8 GPUs, a GPU
taken out, a NIC link down, DRAM shrunk or a GPU's board swapped after the first run each turn
`accept --profile` from PASS to FAIL naming the fact, `host drift` lists it, and putting the fact
back passes again. The facts that sysfs and DMI give (NICs, DRAM) are set through their readers."""

import json

import pytest

from kvbench.hardware import dimm, sysfs
from kvbench.hardware.facts import Dram, Nic
from tests.gpu_standin.fixture import installed
from tests.inproc import run_in_process as cli

NIC_UP = Nic("eth2", "ethernet", "0000:ca:00.0", 0, 400.0, model="0x1021", state="up")
NIC_DOWN = Nic("eth2", "ethernet", "0000:ca:00.0", 0, None, model="0x1021", state="down")
RULES = 'name = "t"\n[[rule]]\nid = "dram-floor"\nbench = "dram.copy"\nmin = { value = 1, unit = "MB/s" }\n'


@pytest.fixture
def box(tmp_path, monkeypatch):
    """The stand-in's 8 GPUs, one 400 Gb/s NIC and 25 GB of DIMMs; a database and this box's profile."""
    state = {"nic": NIC_UP, "dram": 25_000_000_000}
    monkeypatch.setattr(sysfs, "nics", lambda root="/": (state["nic"],))
    monkeypatch.setattr(dimm, "read_dram", lambda: Dram(8, 4800, state["dram"], channels=8))
    with installed(gpus=8) as machine:
        db, profile, rules = f"sqlite:///{tmp_path / 'k.sqlite'}", tmp_path / "node.toml", tmp_path / "rules.toml"
        rules.write_text(RULES)
        assert cli("host", "profile", "-o", str(profile)).returncode == 0
        yield {"machine": machine, "state": state, "db": db, "profile": str(profile), "rules": str(rules),
               "tmp": tmp_path}


def _run(box):
    proc = cli("run", "--bench", "dram.copy", "--set", "size=64KiB", "--samples", "5", "--db", box["db"])
    assert proc.returncode == 0, proc.stderr


def _accept(box):
    return cli("accept", "--run", "latest", "--db", box["db"], "--profile", box["profile"], "--rules", box["rules"],
               "--json", str(box["tmp"] / "accept.json"))


def _named(drift, text):
    """Whether `text` names the change `drift` as holding since run 2 (the run after the first)."""
    return any(drift in line and line.rstrip().endswith("since run 2") for line in text.replace("; ", "\n").splitlines())


def _gpu_out(box):
    box["machine"].gpus.pop()


def _gpu_back(box):
    from gpu_standin.machine import Gpu

    box["machine"].gpus.append(Gpu(7))


def _serial_swapped(box):
    box["machine"].gpus[3].serial = "SWAPPED-BOARD"


def _serial_back(box):
    box["machine"].gpus[3].serial = None


@pytest.mark.parametrize("change,restore,rule,drift", [
    (_gpu_out, _gpu_back, "inventory-gpus", "GPU 7 (00000000:1E:00.0) missing"),
    (lambda b: b["state"].update(nic=NIC_DOWN), lambda b: b["state"].update(nic=NIC_UP), "inventory-nics",
     "NIC eth2 down (was up at 400 Gb/s)"),
    (lambda b: b["state"].update(dram=11_000_000_000), lambda b: b["state"].update(dram=25_000_000_000),
     "inventory-dram_gb", "DRAM 25 GB → 11 GB"),
    (_serial_swapped, _serial_back, "inventory-gpu_serials", "GPU 3 (00000000:1A:00.0) serial STANDIN000003 → SWAPPED-BOARD"),
], ids=["gpu-removed", "nic-down", "dram-shrunk", "gpu-serial-swapped"])
def test_a_fact_changed_after_the_first_run_fails_accept_naming_it_and_restoring_it_passes(box, change, restore, rule,
                                                                                          drift):
    _run(box)
    first = _accept(box)
    assert first.returncode == 0, first.stdout + first.stderr
    change(box)
    _run(box)
    proc = _accept(box)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads((box["tmp"] / "accept.json").read_text())
    failed = [v for v in doc["verdicts"] if v["verdict"] == "FAIL"]
    named = [v for v in failed if v["rule"] == rule]
    assert named and drift in named[0]["why"], failed
    assert {v["rule"] for v in failed} <= {rule, "inventory-gpus", "inventory-gpu_serials"}, failed
    assert _named(drift, proc.stderr)  # beside the verdict too
    if rule == "inventory-dram_gb":  # the report of the same run, with the same profile, says the same
        md = box["tmp"] / "report.md"
        assert cli("report", "-o", str(md), "--db", box["db"], "--profile", box["profile"]).returncode == 0
        text = md.read_text()
        assert text.startswith("# FAIL — kvbench report") and "Inventory drift" in text and _named(drift, text)
    listed = cli("host", "drift", "--db", box["db"])
    assert listed.returncode == 0 and _named(drift, listed.stdout), listed.stdout
    restore(box)
    _run(box)
    again = _accept(box)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "against the first run (run 1): no change" in cli("host", "drift", "--db", box["db"]).stdout
