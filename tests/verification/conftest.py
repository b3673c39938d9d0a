"""What the check catalogue shares: this host's facts, without the slow GPU and DIMM reads."""

import pytest

from kvbench.hardware.fingerprint import collect_facts


@pytest.fixture(scope="module")
def facts():
    return collect_facts(gpus=False, dram=False)
