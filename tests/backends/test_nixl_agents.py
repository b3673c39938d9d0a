"""NIXL agents made by kvbench sleep while idle: their progress thread waits in poll() on its UCX
workers' event fds (up to PROGRESS_POLL_US) instead of spinning a core, as NIXL's Python API would
make it (its config says 0). Every network test transfers between such agents; the CPU an idle one
uses is a figure of `make bench` (benchmarks/idle_agents.py), not asserted here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kvbench.backends.nixl import PROGRESS_POLL_US, backend_unavailable_reason, nixl_api

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")


def test_the_progress_poll_timeout_nixl_writes_as_0_becomes_the_bound():
    config = nixl_api().nixlBind.nixlAgentConfig()
    config.pthrDelay = 0  # what nixl_agent() writes
    assert config.pthrDelay == PROGRESS_POLL_US > 0
    config.pthrDelay = 7  # any other value is kept
    assert config.pthrDelay == 7


def test_busy_polling_comes_back_on_request():
    code = "from kvbench.backends.nixl import nixl_api; c = nixl_api().nixlBind.nixlAgentConfig(); " \
           "c.pthrDelay = 0; print(c.pthrDelay)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "KVBENCH_NIXL_PROGRESS_POLL_US": "0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
