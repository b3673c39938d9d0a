"""Every output path makes its parent folders, and a path that cannot be written is refused first, before
any work (issue 43.9: `export -o .benchmarks/kvbench/0001_kvbench.json` failed when the folder did not
exist; `report -o /nonexist/r.html` rendered for 7 s before refusing the folder). "First" is shown
without a clock: each command is also given a run that does not exist, and the refusal it gives names
the output, not the run (the run would be read before the work)."""

import json

import pytest

from tests.conftest import FIXTURES
from tests.inproc import run_in_process as cli

QUICK = str(FIXTURES / "runs" / "quick-cpu-vm.json")

# (command with {out} for the output path, option named in the refusal); {run} is a run reference
COMMANDS = [
    (["export", "{run}", "--format", "pytest-benchmark", "-o", "{out}"], "--output"),
    (["export", "{run}", "--format", "json", "-o", "{out}"], "--output"),
    (["report", "{run}", "-o", "{out}"], "--output"),
    (["plot", "{run}", "-o", "{out}.png"], "--output"),
    (["accept", "--run", "{run}", "--json", "{out}"], "--json"),
    (["accept", "--run", "{run}", "--junit", "{out}"], "--junit"),
    (["fit", "{run}", "--json", "{out}"], "--json"),
    (["results", "{run}", "--json", "{out}"], "--json"),
    (["compare", "{run}", "{run}", "--json", "{out}"], "--json"),
]


def _args(template, run, out):
    return [a.replace("{run}", run).replace("{out}", out) for a in template]


WRITTEN = [c for c in COMMANDS if c[0][0] != "compare"]  # compare needs a database; its write is the same write_text


@pytest.mark.parametrize("template,option", WRITTEN, ids=[" ".join(c[0][:2]) for c in WRITTEN])
def test_an_output_in_folders_that_do_not_exist_yet_is_written_there(tmp_path, template, option):
    out = tmp_path / ".benchmarks" / "kvbench" / "0001_kvbench.json"
    if template[0] == "report":
        out = out.with_suffix(".html")
    args = _args(template, QUICK, str(out))
    proc = cli(*args, "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
    assert proc.returncode in (0, 1, 3), proc.stderr  # a verdict, whatever it is: not bad input
    written = out.with_name(out.name + ".png") if template[0] == "plot" else out
    assert written.is_file() and written.stat().st_size > 0, proc.stderr
    if option != "--junit" and written.suffix == ".json":
        json.loads(written.read_text())


@pytest.mark.parametrize("template,option", COMMANDS, ids=[" ".join(c[0][:2]) for c in COMMANDS])
def test_an_output_that_cannot_be_made_is_refused_before_the_run_is_read(tmp_path, template, option):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = str(blocker / "sub" / "r.json")  # its folder would have to be made inside a file
    proc = cli(*_args(template, "999", out), "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert f"bad {option} '{out}" in line and "is not a folder" in line, line
    assert not (blocker.parent / "sub").exists()


def test_doctor_refuses_its_json_before_sampling(tmp_path, monkeypatch):
    from kvbench.hardware import doctor

    monkeypatch.setattr(doctor, "run_checks", lambda box: pytest.fail("sampled before the output was checked"))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    proc = cli("doctor", "--json", str(blocker / "d.json"))
    assert proc.returncode == 2 and "bad --json" in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_a_read_only_place_for_a_new_folder_is_refused_naming_the_folder(tmp_path):
    proc = cli("export", QUICK, "-o", "/proc/kvbench-new/r.json")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "bad --output '/proc/kvbench-new/r.json': not writable (folder '/proc/kvbench-new' would be made in " \
           "'/proc')" in line, line
