"""Loaded by Python at start-up when tests/gpu_standin/site is on PYTHONPATH (a test's subprocess
only): the GPU stand-in answers kvbench's driver question. TEST ONLY.

kvbench's GPU loads (load=hbm|gemm, kvbench/backends/gpu_load.py) are sized for a GPU: 2 × 256 MiB
per copy kernel, 4096³ products. The stand-in runs kernels in numpy, where such a load made each
loaded case of `scripts/gpu-check --stage full` take 10-27 s (71 s of a 150 s test); here they are
1 MiB and 64³, as the in-process stand-in tests set them with monkeypatch."""

import importlib.abc
import importlib.machinery
import sys

import gpu_standin

gpu_standin.activate()


class _SmallLoads(importlib.abc.MetaPathFinder):
    MODULE = "kvbench.backends.gpu_load"

    def find_spec(self, name, path, target=None):
        if name != self.MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module) -> None:
            run_module(module)
            module.HBM_BYTES, module.GEMM_N = 1 << 20, 64

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _SmallLoads())
