"""Issue 57 item 5: a profile or health file that checks nothing, or a health file naming one check id
twice, is refused in one line (exit 2) — never a silent switch-off of every inventory or health rule —
however the run reaches `accept` (measured now at level 1, id, `latest`, export, imported export), and by
`report --profile`. Synthetic stored runs."""

import pytest

from tests.inproc import run_in_process as cli
from tests.one_case_runs import store_one_case_runs

HOST, CTX, CASE = "test-box-i57-5", "a" * 64, "5555aaaa5555aaaa"
ENV = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400"}
CHECK = '[[check]]\nid = "xid"\ncounter = "xid"\nmax = 0\n'
FILES = {
    "empty profile": ("--profile", "name = 'nothing'\n[expect]\n"),
    "profile without expect": ("--profile", "name = 'nothing'\n"),
    "health without checks": ("--health", "name = 'nothing'\n"),
    "health from the environment": ("KVBENCH_HEALTH", "name = 'nothing'\n"),
    "duplicate health id": ("--health", CHECK + CHECK.replace("max = 0", "max = 5")),
}
WAYS = ["live", "id", "latest", "export", "imported"]


def _run_ref(tmp_path, how: str) -> tuple[list[str], str]:
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    store_one_case_runs(db, HOST, CTX, CASE, "quick", [(10.0, {}, {})])
    if how == "live":
        return ["--level", "1"], db
    if how in ("id", "latest"):
        return ["--run", "1" if how == "id" else "latest"], db
    path = tmp_path / "run.json"
    assert cli("export", "1", "-o", str(path), "--db", db, env=ENV).returncode == 0
    if how == "export":
        return ["--run", str(path)], db
    fresh = f"sqlite:///{tmp_path / 'imported.sqlite'}"
    assert cli("import", str(path), "--db", fresh, env=ENV).returncode == 0
    return ["--run", "1"], fresh


@pytest.mark.parametrize("how", WAYS)
@pytest.mark.parametrize("kind", list(FILES))
def test_accept_refuses_a_file_that_checks_nothing(tmp_path, how, kind):
    option, text = FILES[kind]
    path = tmp_path / "file.toml"
    path.write_text(text)
    args, db = _run_ref(tmp_path, how)
    env = {**ENV, option: str(path)} if option.isupper() else ENV
    given = [] if option.isupper() else [option, str(path)]
    proc = cli("accept", *args, *given, "--db", db, env=env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and str(path) in lines[0], proc.stdout + proc.stderr
    assert ("twice" if "duplicate" in kind else "checks nothing") in lines[0], lines[0]


def test_report_refuses_a_profile_that_checks_nothing(tmp_path):
    path = tmp_path / "empty.toml"
    path.write_text("[expect]\n")
    _args, db = _run_ref(tmp_path, "id")
    proc = cli("report", "1", "--profile", str(path), "-o", str(tmp_path / "r.md"), "--db", db, env=ENV)
    assert proc.returncode == 2 and "checks nothing" in proc.stderr.strip().splitlines()[-1], proc.stderr
