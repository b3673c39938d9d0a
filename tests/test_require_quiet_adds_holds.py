"""Issue 57 item 1: `compare --require-quiet` only ever adds holds — a drop its contended side cannot
have faked, or beyond 8×, gates in every mode, however the runs reach `compare`. Synthetic stored runs."""

import pytest

from tests.inproc import run_in_process as cli
from tests.test_compare_sees_or_says import BUSY, ENV, QUIET, WAYS, _last, _refs, _store


@pytest.mark.parametrize("how", WAYS)
@pytest.mark.parametrize("factor", [0.01, 0.5])
def test_require_quiet_never_passes_a_drop_against_a_contended_base(tmp_path, how, factor):
    # item 1: --require-quiet held a quiet −99 % drop against a contended base (INCOMPLETE, and with
    # --allow-incomplete exit 0) where the default FAILs it; so did a −50 % one
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    ids = _store(db, [(10.0, QUIET), (10.1, QUIET), (9.9, QUIET), (10.0, BUSY), (10.0 * factor, QUIET)])
    base, new, where = _refs(db, tmp_path, how, ids[-2], ids[-1])
    for flags in ([], ["--require-quiet"], ["--require-quiet", "--allow-incomplete"]):
        proc = cli("compare", base, new, "--db", where, *flags, env=ENV)
        assert proc.returncode == 1 and _last(proc).startswith("FAIL: 1 case(s) slower"), (flags, _last(proc))


@pytest.mark.parametrize("how", WAYS)
def test_require_quiet_keeps_a_drop_beyond_eight_times_slower(tmp_path, how):
    # item 1: beyond the 8× no neighbour explains, a drop on a contended new run gates in every mode
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    ids = _store(db, [(10.0, QUIET), (10.1, QUIET), (9.9, QUIET), (10.0, QUIET), (0.5, BUSY)])
    base, new, where = _refs(db, tmp_path, how, ids[-2], ids[-1])
    proc = cli("compare", base, new, "--db", where, "--require-quiet", "--allow-incomplete", env=ENV)
    assert proc.returncode == 1, _last(proc)
