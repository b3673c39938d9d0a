"""The `standin` fixture: the CUDA stand-in installed for one test (tests/gpu_standin/fixture.py)."""

import pytest

from tests.gpu_standin.fixture import installed


@pytest.fixture
def standin():
    with installed(gpus=1) as machine:
        yield machine


@pytest.fixture
def standin_two_gpus():
    with installed(gpus=2) as machine:
        yield machine
