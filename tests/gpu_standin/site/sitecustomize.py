"""Loaded by Python at start-up when tests/gpu_standin/site is on PYTHONPATH (a test's subprocess
only): the GPU stand-in answers kvbench's driver question. TEST ONLY."""

import gpu_standin

gpu_standin.activate()
