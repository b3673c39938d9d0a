"""Mooncake's Transfer Engine in tests: a child process whose loader finds a stand-in CUDA driver.

The wheel links libcuda.so.1, which a machine without a GPU lacks. The stand-in
(tests/fixtures/libcuda_stub) is compiled here from the list of symbols the wheel imports, each
answering CUDA_ERROR_NO_DEVICE, and only ever handed to child processes through LD_LIBRARY_PATH:
the test process itself never loads it, so the other tests' CUDA probes see this host as it is.
Nothing measured with it is stored anywhere but in a test's temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, REPO

SYMBOLS = FIXTURES / "libcuda_stub" / "symbols.txt"
NO_DEVICE = 100  # CUDA_ERROR_NO_DEVICE


def symbols() -> list[str]:
    return [s.strip() for s in SYMBOLS.read_text().split() if s.strip()]


def build_stub(folder: Path) -> Path:
    """libcuda.so.1 in `folder`, every listed function returning CUDA_ERROR_NO_DEVICE."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler (cc) to build the test-only libcuda.so.1")
    source = folder / "libcuda_stub.c"
    source.write_text("".join(f"int {name}(void) {{ return {NO_DEVICE}; }}\n" for name in symbols()))
    out = folder / "libcuda.so.1"
    subprocess.run([compiler, "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(out), str(source)],
                   check=True, capture_output=True)
    return out


def child_env(stub_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the stand-in driver first on the loader path."""
    env = {**os.environ, **extra, "PYTHONPATH": str(REPO)}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(stub_dir), os.environ.get("LD_LIBRARY_PATH")) if p)
    return env


def mooncake_reason_in(env: dict[str, str]) -> str | None:
    """What kvbench says of Mooncake in a process with `env` (None: it loads)."""
    done = subprocess.run([sys.executable, "-c", "from kvbench.backends.mooncake import mooncake_unavailable_reason "
                           "as r; print(r() or '')"], env=env, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return f"the probe exited {done.returncode}: {done.stderr.strip()[-300:]}"
    return done.stdout.strip() or None


CHILD = """
import json, sys
from kvbench.benches import get_bench
from kvbench.hardware.fingerprint import collect_facts
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case
spec = json.loads(sys.argv[1])
if spec.get("no_op"):  # the transfer moves nothing (or, "after_first", every batch but the first moves
    from kvbench.backends.mooncake import MooncakeTransfer  # nothing): the poisoned far side must fail the check
    real, made = MooncakeTransfer.run, []
    def run(self):
        made[:] = made or [self]  # the first batch run is the one that still moves its bytes
        if spec["no_op"] == "after_first" and made[0] is self:
            return real(self)
    MooncakeTransfer.run = run
bench = get_bench(spec["bench"])
if spec.get("stop_peer"):  # the peer process is killed (or stopped) once the case is prepared and has run once
    import os, signal, time
    prepared = bench.prepare(bench.canonical_params(spec["params"]))
    try:
        prepared.workload.run()
        os.kill(prepared.metadata["buffers"]["remote"]["pid"], getattr(signal, spec["stop_peer"]))
        start, error = time.monotonic(), None
        try:
            for _ in range(2000):
                prepared.workload.run()
        except RuntimeError as exc:
            error = str(exc)
        print(json.dumps({"error": error, "seconds": time.monotonic() - start}))
    finally:
        os.kill(prepared.metadata["buffers"]["remote"]["pid"], signal.SIGKILL)
        prepared.close()
    sys.exit(0)
settings = Settings(samples=spec.get("samples", 5), min_sample_s=0.002, warmup_s=0)
result = run_case(Case(spec["bench"], bench.canonical_params(spec["params"])), collect_facts(gpus=False, dram=False),
                  settings)
m = result.measurement
print(json.dumps({"status": result.status, "reason": result.reason, "metadata": result.metadata,
                  "verified": bool(m and m.verified), "bytes_per_op": m.bytes_per_op if m else None,
                  "gbps": m.bytes_per_op / sorted(m.samples_s)[len(m.samples_s) // 2] / 1e9 if m else None,
                  "paired": m.record().get("paired") if m else None}, default=str))
"""


def run_case_in_child(env: dict[str, str], bench: str, params: dict, timeout_s: float = 300, **spec) -> dict:
    """run_case in a child process with `env`; its result as a dict (status, reason, metadata, verified…)."""
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps({"bench": bench, "params": params, **spec})],
                          env=env, capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
