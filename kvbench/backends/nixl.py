"""NIXL, the data plane for storage and network transfers: import, availability, agents, and one
prepared transfer that a measurement can post again and again.

The Python module is `nixl` (meta package) or `nixl_cu13` / `nixl_cu12`; it works on a machine
without a GPU (UCX and POSIX plugins). Transfers are prepared once (`prep_xfer_dlist` +
`make_prepped_xfer` from numpy descriptor arrays), so Python is not what gets measured.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import glob
import os
import sys
import tempfile
import time
from types import ModuleType

import numpy as np

from kvbench.hardware import optional

# Every NIXL wait is bounded: one transfer that never completes fails its case after this many
# seconds instead of eating a whole run (or a test session); KVBENCH_NIXL_TIMEOUT_S overrides.
DEFAULT_TIMEOUT_S = float(os.environ.get("KVBENCH_NIXL_TIMEOUT_S", "60"))
# What NIXL's GDS plugins link against: their RUNPATH searches only NIXL's own folder, so the CUDA
# runtime and cuFile that pip installed (nvidia/*/lib) must be loaded before a GDS backend starts.
GDS_LIBRARIES = (("libcudart.so.13", "libcudart.so.12"), ("libcufile.so.0",))
# The longest an agent's progress thread sleeps in poll() on its UCX workers' event fds, in µs (NIXL
# rounds it up to whole ms). Any event wakes it at once, so transfers are not slowed by it; NIXL's
# Python API fixes it at 0, which makes poll() return at once and every agent spin a whole core
# while idle (seen: 5.0 s of CPU in 5 s for one idle peer; 0.15 s at 1000 µs). A serving peer then
# takes a core from the transfer it serves, and on a 2-core box from everything else.
# KVBENCH_NIXL_PROGRESS_POLL_US=0 restores NIXL's busy polling.
PROGRESS_POLL_US = int(os.environ.get("KVBENCH_NIXL_PROGRESS_POLL_US", "1000"))


def _remove_ucx_logs() -> None:
    """This process's UCX log and those of the peers it started (their names carry this pid)."""
    folder, prefix = tempfile.gettempdir(), f"kvbench-ucx-{os.getpid()}-"
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix) and name.endswith(".log"):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def unlink_own_ucx_log() -> None:
    """Remove this process's UCX log now, while UCX keeps writing to the open file: a process that
    never reads its log (a serving peer) then leaves none behind even when killed (SIGKILL)."""
    template = os.environ.get("UCX_LOG_FILE", "")
    name = os.path.basename(template)
    if "%p" in name and name.startswith("kvbench-ucx-") and os.path.dirname(template) == tempfile.gettempdir():
        try:
            os.unlink(template.replace("%p", str(os.getpid())))
        except OSError:
            pass  # not opened yet, or gone already


@functools.cache
def nixl_api() -> ModuleType | None:
    # NIXL logs every agent and backend at INFO, which would flood the progress bar.
    os.environ.setdefault("NIXL_LOG_LEVEL", "WARN")
    if not os.path.isdir("/sys/class/infiniband") or not os.listdir("/sys/class/infiniband"):
        # Without an RDMA device UCX's ib module has nothing to drive, and the libnl it pulls in
        # crashes the process at exit (nixl-cu13 1.5.1 bundled UCX: status 139 from
        # rtnl_tc_unregister). Not loading it changes nothing else; set UCX_MODULES to override.
        os.environ.setdefault("UCX_MODULES", "^ib")
    # UCX logs (its warnings, and the protocol tables kvbench asks for) go to a file per
    # process instead of the terminal; benches read the tables from it. The name carries this
    # process's pid and the writer's (%p): a peer process inherits it, so this process removes
    # every one at exit, and a later kvbench sweeps them all if this one was killed.
    if "UCX_LOG_FILE" not in os.environ:
        os.environ["UCX_LOG_FILE"] = os.path.join(tempfile.gettempdir(), f"kvbench-ucx-{os.getpid()}-%p.log")
        atexit.register(_remove_ucx_logs)
    _broken.clear()
    for name in ("nixl._api", "nixl_cu13._api", "nixl_cu12._api"):
        try:
            api = optional.load(name)
        except ImportError as exc:
            if isinstance(exc, optional.NotLoaded) or not isinstance(exc, ModuleNotFoundError):
                _broken.append(optional.why(exc, name))
            continue
        _bound_progress_polling(api)
        return api
    return None


_broken: list[str] = []  # why an installed NIXL did not load (nixl_api's last look)


def _bound_progress_polling(api: ModuleType) -> None:
    """Make `api.nixl_agent` give its agents a progress-thread poll timeout of PROGRESS_POLL_US
    instead of the 0 it writes into the C++ config (see PROGRESS_POLL_US). The constructor reads the
    bindings through its module's `nixlBind`, so that name gets a copy of the bindings whose config
    class turns that 0 into the bound; nothing else changes."""
    bindings = getattr(api, "nixlBind", None)
    if bindings is None or getattr(bindings, "kvbench_progress_poll_us", None) is not None:
        return
    poll_us = PROGRESS_POLL_US

    class AgentConfig(bindings.nixlAgentConfig):
        def __setattr__(self, name: str, value) -> None:
            if name == "pthrDelay" and value == 0:
                value = poll_us
            super().__setattr__(name, value)

    shim = ModuleType(bindings.__name__, bindings.__doc__)
    shim.__dict__.update({k: v for k, v in vars(bindings).items() if k not in ("__name__", "__doc__")})
    shim.nixlAgentConfig = AgentConfig
    shim.kvbench_progress_poll_us = poll_us
    api.nixlBind = shim


def nixl_version() -> str | None:
    from importlib import metadata

    for dist in ("nixl", "nixl-cu13", "nixl-cu12"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def nixl_unavailable_reason() -> str | None:
    if nixl_api() is None:
        if _broken:
            return f"NIXL does not load: {_broken[0]}"
        return "NIXL is not installed (pip install nixl-cu13, or the cu12/cu13 extra)"
    return None


@functools.cache
def plugins() -> tuple[str, ...]:
    """Backend plugins this NIXL build can load (creating none of them)."""
    api = nixl_api()
    if api is None:
        return ()
    agent = api.nixl_agent("kvbench-probe", api.nixl_agent_config(backends=[]))
    return tuple(agent.get_plugin_list())


def find_library(soname: str, roots: list[str] | None = None) -> str | None:
    """A file named `soname` in a pip-installed NVIDIA package (`nvidia/*/lib`) or a CUDA folder."""
    roots = roots if roots is not None else [*sys.path, "/usr/local/cuda"]
    for root in roots:
        for pattern in ("nvidia/*/lib", "nvidia/*/*/lib", "lib64", "targets/*/lib"):
            found = sorted(glob.glob(os.path.join(root, pattern, soname)))
            if found:
                return found[0]
    return None


def _load_global(alternatives: tuple[str, ...]) -> bool:
    """Load the first of `alternatives` (sonames) that the loader or `find_library` finds."""
    for soname in alternatives:
        for candidate in (soname, find_library(soname)):
            if candidate is None:
                continue
            try:
                ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
                return True
            except OSError:
                continue
    return False


@functools.cache
def preload_gds_libraries() -> str | None:
    """Load the CUDA runtime and cuFile globally, so NIXL's GDS plugins find them; None when done,
    else which library is missing (the GDS backends then cannot start, and say so)."""
    missing = [" or ".join(alternatives) for alternatives in GDS_LIBRARIES if not _load_global(alternatives)]
    if missing:
        return f"{', '.join(missing)} not found (pip's nvidia packages, /usr/local/cuda, or the loader path)"
    return None


@functools.cache
def backend_unavailable_reason(backend: str) -> str | None:
    """None when `backend` (UCX, POSIX, GDS, GDS_MT) can be instantiated here, else why not."""
    reason = nixl_unavailable_reason()
    if reason:
        return reason
    if backend not in plugins():
        return f"NIXL plugin {backend} is missing (available: {', '.join(plugins())})"
    if backend.startswith("GDS"):
        missing = preload_gds_libraries()
        if missing:
            return f"NIXL backend {backend} cannot start here: {missing}"
    api = nixl_api()
    agent = api.nixl_agent(f"kvbench-probe-{backend.lower()}", api.nixl_agent_config(backends=[]))
    try:
        agent.create_backend(backend)
    except Exception as exc:  # the plugin's own error (e.g. GDS without CUDA / cuFile)
        return f"NIXL backend {backend} cannot start here: {str(exc).strip().splitlines()[0][:160]}"
    return None


def make_agent(name: str, backends: list[str], threads: int = 0, listen_port: int | None = None,
               telemetry: bool = True, backend_params: dict[str, str] | None = None):
    """An agent with `backends` created; `backend_params` go to every backend's init (e.g. use_uring)."""
    if any(b.startswith("GDS") for b in backends):
        preload_gds_libraries()
    api = nixl_api()
    config = api.nixl_agent_config(
        enable_prog_thread=True, enable_listen_thread=listen_port is not None,
        listen_port=listen_port or 0, capture_telemetry=telemetry, num_threads=threads,
        backends=[] if backend_params else backends,
    )
    agent = api.nixl_agent(name, config)
    if backend_params:
        for backend in backends:
            agent.create_backend(backend, dict(backend_params))
    return agent


def desc_array(addresses: np.ndarray, lengths: np.ndarray, device: int | np.ndarray = 0) -> np.ndarray:
    """An Nx3 uint64 array of (address or file offset, length, device id or fd) rows."""
    n = len(lengths)
    out = np.empty((n, 3), dtype=np.uint64)
    out[:, 0] = addresses
    out[:, 1] = lengths
    out[:, 2] = device
    return out


class PreparedTransfer:
    """One NIXL request, prepared once; `run()` posts it and waits until it is done."""

    def __init__(self, agent, operation: str, local: np.ndarray, local_mem: str, remote: np.ndarray,
                 remote_mem: str, remote_agent: str, backends: list[str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.agent = agent
        self.timeout_s = timeout_s
        self.operation = operation
        self.local_descs, self.remote_descs = local, remote  # (address or offset, length, device or fd) rows
        backends = backends or []
        self._local = agent.prep_xfer_dlist("NIXL_INIT_AGENT", local, local_mem, backends=backends)
        self._remote = agent.prep_xfer_dlist(remote_agent, remote, remote_mem, backends=backends)
        indices = np.arange(len(local), dtype=np.int32)
        self.handle = agent.make_prepped_xfer(operation, self._local, indices, self._remote, indices,
                                              backends=backends)

    @property
    def backend(self) -> str:
        """The backend NIXL chose for this request (query_xfer_backend)."""
        return self.agent.query_xfer_backend(self.handle)

    def run(self) -> None:
        """Post the request and wait until it is done."""
        self.post()
        self.wait()

    def post(self) -> None:
        try:
            self._state = self.agent.transfer(self.handle)
        except Exception as exc:  # NIXL's own errors, e.g. nixlRemoteDisconnectError when a peer died
            raise RuntimeError(f"NIXL transfer failed: {type(exc).__name__}: {exc}") from exc

    def wait(self) -> None:
        state, deadline = self._state, None
        try:
            while state == "PROC":
                state = self.agent.check_xfer_state(self.handle)
                if state == "PROC":
                    deadline = deadline or time.monotonic() + self.timeout_s
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"NIXL transfer did not finish within {self.timeout_s:.0f} s")
        except RuntimeError:
            raise
        except Exception as exc:
            raise RuntimeError(f"NIXL transfer failed: {type(exc).__name__}: {exc}") from exc
        if state != "DONE":
            raise RuntimeError("NIXL transfer failed (state ERR): the peer or the backend reported an error")

    def telemetry(self) -> dict[str, float] | None:
        """Post and transfer time of the last request in µs, when telemetry was captured."""
        try:
            t = self.agent.get_xfer_telemetry(self.handle)
        except Exception:
            return None
        return {"post_us": float(t.postDuration), "xfer_us": float(t.xferDuration), "descs": int(t.descCount)}

    def release(self) -> None:
        for release in (lambda: self.agent.release_xfer_handle(self.handle),
                        lambda: self.agent.release_dlist_handle(self._local),
                        lambda: self.agent.release_dlist_handle(self._remote)):
            try:
                release()
            except Exception:
                pass
