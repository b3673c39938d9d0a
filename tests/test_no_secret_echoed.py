"""A database URL typed into the wrong slot never shows its password: not in an error's echo (kvbench's
own, typer's, argparse's in `python -m kvbench.cluster.launch` before and after `--`), not in a stored tag,
not in the UCX environment stored with a network result. kvbench's commands run in this process (`cli`,
tests/inproc.py: what they print is the point), the launcher as the process it is."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvbench.redact import redact
from kvbench.store import open_store
from tests.conftest import REPO
from tests.inproc import run_in_process as cli

SECRET = "s3cr3t-PW"
URL = f"postgresql://kv:{SECRET}@127.0.0.1:1/db"


@pytest.mark.parametrize("args", [
    ["compare", URL], ["plan", "--model", URL, "--tokens", "4"], ["run", "--suite", URL],
    ["run", "--bench", "dram.copy", "--set", f"size={URL}"], ["history", URL], ["fleet", "--bench", URL],
    ["results", "--dbb", URL], ["results", URL], ["export", URL, "--format", URL],
])
def test_an_echoed_url_has_no_password(tmp_path, args):
    proc = cli(*args, env={"KVBENCH_DB": f"sqlite:///{tmp_path / 'k.sqlite'}", "KVBENCH_HOST_ID": "echobox"})
    assert proc.returncode != 0
    assert SECRET not in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [  # a path normalisation leaves `postgresql:/kv:...@` (one slash)
    ["accept", "--rules", URL], ["accept", "--rules", f"{URL}.toml"], ["plan", "--model", f"{URL}.json", "--tokens", "5"],
])
def test_a_url_mangled_into_a_path_has_no_password(tmp_path, args):
    proc = cli(*args, env={"KVBENCH_DB": f"sqlite:///{tmp_path / 'k.sqlite'}", "KVBENCH_HOST_ID": "echobox"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr and "kv:***@" in proc.stderr, proc.stderr


@pytest.mark.parametrize("text,shown", [
    ("rules postgresql:/kv:pw@127.0.0.1:1/db", "rules postgresql:/kv:***@127.0.0.1:1/db"),
    ("a 'kv:pw@127.0.0.1:1/x' b", "a 'kv:***@127.0.0.1:1/x' b"),
    ("bad 'postgresql:/kv:pw@h:1/x/y.json': folder 'postgresql:/kv:pw@h:1/x' does not exist",
     "bad 'postgresql:/kv:***@h:1/x/y.json': folder 'postgresql:/kv:***@h:1/x' does not exist"),
    ("--set 'postgresql://kv:p@w@h:1/db=1' (they take: a, b)", "--set 'postgresql://kv:***@h:1/db=1' (they take: a, b)"),
    ("postgresql://kv@[::1]:5432/db", "postgresql://kv@[::1]:5432/db"),  # no password: left as it was
])
def test_redaction_hides_only_the_password(text, shown):
    assert redact(text) == shown


def test_redacted_messages_keep_the_text_around_the_url(tmp_path):
    env = {"KVBENCH_DB": f"sqlite:///{tmp_path / 'k.sqlite'}", "KVBENCH_HOST_ID": "echobox"}
    proc = cli("export", "1", "-o", f"/proc/{URL}/x/y.json", env=env)  # a folder that cannot be made in /proc
    assert proc.returncode == 2 and SECRET not in proc.stdout + proc.stderr, proc.stderr
    assert "127.0.0.1:1/db/x" in proc.stderr, proc.stderr
    proc = cli("run", "--set", f"{URL}=1", env=env)
    assert proc.returncode == 2 and SECRET not in proc.stdout + proc.stderr, proc.stderr
    assert "--set postgresql://kv:***@127.0.0.1:1/db: no selected benchmark takes" in proc.stderr, proc.stderr


def test_host_merge_and_tag_neither_echo_nor_store_the_password(tmp_path):
    url = f"sqlite:///{tmp_path / 'k.sqlite'}"
    store = open_store(url)
    store.ensure_host("h" * 64, "here", {})
    store.ensure_context("c" * 64, {})
    run_id = store.begin_run(host_id="h" * 64, context_id="c" * 64, suite=None, suite_hash=None, kvbench_version="0",
                             git_sha=None, git_dirty=None, tags={}, system_state={})
    store.finish_run(run_id, "complete")
    store.dispose()
    for args in (["host", "merge", URL], ["tag", str(run_id), URL], ["tag", str(run_id), "where", URL]):
        proc = cli(*args, "--db", url)
        assert SECRET not in proc.stdout + proc.stderr, args
    tags = open_store(url, read_only=True).run(run_id)["tags"]
    assert SECRET not in repr(tags) and tags.get("where") == "postgresql://kv:***@127.0.0.1:1/db"


@pytest.mark.parametrize("rank", ["0", "1"])  # rank 0 checks rank 1's arguments too, before it waits for it
@pytest.mark.parametrize("argv", [["--db", URL], ["--peer-addr", "127.0.0.1", "--", "--dbb", URL],
                                  ["--peer-addr", "127.0.0.1", "--timeout", "3600", "--", "--samples", URL]])
def test_the_launcher_s_argparse_messages_have_no_password(argv, rank):
    proc = subprocess.run([sys.executable, "-m", "kvbench.cluster.launch", *argv], capture_output=True, text=True,
                          timeout=300, cwd=REPO, env={"RANK": rank, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and "error:" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert SECRET not in proc.stderr and "kv:***@" in proc.stderr


def test_stored_ucx_variables_keep_only_allow_listed_values(monkeypatch):
    from kvbench.benches.net import ucx_settings

    monkeypatch.setenv("UCX_TLS", "rc,cuda_copy")
    monkeypatch.setenv("UCX_RNDV_THRESH", "8192")
    monkeypatch.setenv("UCX_SOME_KEY_FILE", f"/etc/{SECRET}")
    stored = ucx_settings()
    assert stored["UCX_TLS"] == "rc,cuda_copy" and stored["UCX_RNDV_THRESH"] == "8192"
    assert "UCX_SOME_KEY_FILE" in stored and SECRET not in repr(stored)
