"""Mooncake's Transfer Engine backend: what it accepts, what it says when it cannot load, and the
test-only driver's symbol list kept equal to what the installed wheel imports."""

import shutil
import subprocess
from pathlib import Path

import pytest

from kvbench.backends.mooncake import P2P, check_metadata, local_address_towards
from kvbench.errors import BadInput
from tests.mooncake_driver import symbols


@pytest.mark.parametrize("value", [P2P, "etcd://10.0.0.1:2379", "http://10.0.0.1:8080/metadata", "redis://h:6379"])
def test_metadata_modes_mooncake_takes(value):
    assert check_metadata(value) == value


@pytest.mark.parametrize("value", ["", "p2phandshake", "etcd://", "10.0.0.1:2379"])
def test_other_metadata_is_refused_naming_it(value):
    with pytest.raises(BadInput, match=f"bad mooncake_metadata={value!r}"):
        check_metadata(value)


def test_the_local_address_is_the_one_on_the_route():
    assert local_address_towards("127.0.0.1") == "127.0.0.1"


def test_the_stand_in_driver_defines_every_driver_symbol_the_wheel_imports():
    try:
        import importlib.util

        spec = importlib.util.find_spec("mooncake")
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("Mooncake Transfer Engine is not installed")
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed")
    engine = Path(spec.submodule_search_locations[0]) / "engine.so"
    listed = subprocess.run(["nm", "-D", "--undefined-only", str(engine)], capture_output=True, text=True, check=True)
    imported = sorted({line.split()[-1] for line in listed.stdout.splitlines()
                       if line.split() and line.split()[-1][:2] == "cu" and line.split()[-1][2:3].isupper()})
    assert imported == sorted(symbols())


@pytest.mark.parametrize("given,limit", [(None, 1024), ("64", 64), ("16384", 16384), ("65536", 1024), ("0", 1024),
                                         ("many", 1024)])
def test_a_tcp_batch_holds_at_most_the_queue_the_engine_starts_with(monkeypatch, given, limit):
    """Issue 58.6: Mooncake's TCP transport refuses a batch longer than its per-peer queue (status -1);
    a value it does not take leaves its default, 1,024. RDMA: no limit kvbench knows of."""
    from kvbench.backends.mooncake import TCP_QUEUE_ENV, batch_limit

    if given is None:
        monkeypatch.delenv(TCP_QUEUE_ENV, raising=False)
    else:
        monkeypatch.setenv(TCP_QUEUE_ENV, given)
    assert batch_limit("tcp") == limit and batch_limit("rdma") is None
