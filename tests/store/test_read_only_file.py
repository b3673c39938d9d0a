"""A SQLite file the user may read but not write: a command that changes it says it needs write access
(as PostgreSQL's refusal does), one line, exit 2 — not `cannot reach database`."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli


def _nobody() -> pwd.struct_passwd:
    if os.geteuid() != 0:
        pytest.skip("needs root to run kvbench as 'nobody' (a plain user cannot change user)")
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")


def _tag_as_nobody(folder_mode: int, parent_mode: int = 0o755) -> subprocess.CompletedProcess:
    """`kvbench tag 1 baseline` run as 'nobody' on a read-only database (mode 0444) of one run, in a
    folder of `folder_mode` inside a folder of `parent_mode`."""
    nobody = _nobody()
    with tempfile.TemporaryDirectory(prefix="kvbench-ro-parent-") as parent:
        os.chmod(parent, parent_mode)
        return _tag_in(parent, folder_mode, nobody)


def _tag_in(parent: str, folder_mode: int, nobody: pwd.struct_passwd) -> subprocess.CompletedProcess:
    # pytest's tmp_path is private to root (0700): the database lies where 'nobody' may read it
    with tempfile.TemporaryDirectory(prefix="kvbench-ro-", dir=parent) as folder:
        os.chmod(folder, folder_mode)
        db = Path(folder) / "k.sqlite"
        url = f"sqlite:///{db}"
        proc = run_cli("run", "--bench", "dram.copy", "--set", "size=64KiB", "--samples", "5", "--db", url)
        assert proc.returncode == 0, proc.stderr
        scratch = Path(folder) / "scratch.sqlite"
        scratch.write_bytes(db.read_bytes())
        os.chmod(db, 0o444)
        # The interpreter lies under root's private home, which 'nobody' cannot read: a first `tag` on a
        # writable copy loads every module the command needs, then the process becomes 'nobody'
        become = (f"import os, sys, kvbench.__main__\n"
                  f"def tag(url):\n    sys.argv = ['kvbench', 'tag', '1', 'baseline', '--db', url]\n"
                  f"    try:\n        kvbench.__main__.main()\n    except SystemExit as exc:\n"
                  f"        if exc.code: raise\n"
                  f"tag({'sqlite:///' + str(scratch)!r})\n"
                  f"os.setgroups([]); os.setgid({nobody.pw_gid}); os.setuid({nobody.pw_uid})\n"
                  f"tag({url!r})\n")
        proc = subprocess.run([sys.executable, "-c", become], capture_output=True, text=True, cwd=REPO,
                              timeout=300, env={**os.environ, "HOME": folder})
        return proc


# 0o755: root's folder, where 'nobody' cannot make the -shm file either (refused as the store opens);
# 0o777: only the database file is read-only (refused at the tag's own write)
@pytest.mark.parametrize("folder_mode", [0o755, 0o777])
def test_tag_on_a_file_without_write_permission_needs_write_access(folder_mode):
    proc = _tag_as_nobody(folder_mode)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs write access" in lines[0] and "cannot reach" not in lines[0], proc.stderr


def test_a_database_in_a_folder_the_user_cannot_enter_is_one_line_naming_it():
    # root's private folder (0700) above the database: even whether the file exists cannot be seen
    proc = _tag_as_nobody(0o755, parent_mode=0o700)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot be reached" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
