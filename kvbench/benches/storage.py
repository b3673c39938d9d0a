"""`storage.read` / `storage.write`: files ↔ host or GPU memory through NIXL (POSIX, GDS, GDS_MT).

Each operation is one NIXL request of `batch` descriptors of `io_size` bytes (the requests in
flight). Requests are prepared once and cycled; files are cold (written, fsynced, dropped from
the page cache) and opened O_DIRECT — where the filesystem refuses O_DIRECT the result says
`page-cache` and carries a warning, never passing cached bytes off as disk bandwidth.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

import numpy as np

from kvbench.backends.nixl import (
    PreparedTransfer,
    backend_unavailable_reason,
    desc_array,
    make_agent,
)
from kvbench.benches.base import Benchmark, Prepared
from kvbench.benches.declared import STORAGE
from kvbench.benches.registry import register
from kvbench.errors import BadInput, IntegrityError
from kvbench.hardware.path import Segment
from kvbench.measure.engine import Workload
from kvbench.memory.files import check_directory, create_files, mount_of
from kvbench.memory.host import check_fits
from kvbench.memory.kinds import allocate, kind_unavailable_reason, parse_kind
from kvbench.memory.nixl_regions import nixl_memory
from kvbench.memory.pattern import POISON, pattern_bytes

BACKENDS = {"posix": "POSIX", "gds": "GDS", "gds_mt": "GDS_MT"}
# The POSIX plugin's I/O engines (its init parameters); "auto" lets the plugin pick.
POSIX_APIS = {"auto": {}, "aio": {"use_aio": "true"}, "uring": {"use_uring": "true"},
              "posix_aio": {"use_posix_aio": "true"}}
MAX_REQUESTS = 256  # distinct prepared requests cycled through; more only costs preparation
WRITE_SEED = 1000  # the pattern storage.write carries


def gds_compat_mode() -> bool | None:
    """cuFile's `allow_compat_mode` (CUFILE_ENV_PATH_JSON or /etc/cufile.json); None when unreadable.

    With it on, GDS silently falls back to reading through host memory when the direct path is
    not possible — the fallback users complain about — so the result carries it.
    """
    import json
    import re as _re

    path = os.environ.get("CUFILE_ENV_PATH_JSON", "/etc/cufile.json")
    try:
        text = open(path).read()
    except OSError:
        return None
    try:
        config = json.loads(_re.sub(r"^\s*//.*$", "", text, flags=_re.M))  # cufile.json carries // comments
    except json.JSONDecodeError:
        return None
    return bool(config.get("properties", {}).get("allow_compat_mode", config.get("allow_compat_mode", False)))


def plan_requests(files: int, file_bytes: int, io_size: int, batch: int, pattern: str, seed: int) -> np.ndarray:
    """(requests, batch, 2) array of (file index, offset) for each descriptor of each request."""
    per_file = file_bytes // io_size
    blocks = np.stack(np.divmod(np.arange(files * per_file), per_file), axis=1)  # (file, block)
    if pattern == "random":
        blocks = blocks[np.random.default_rng(seed).permutation(len(blocks))]
    count = min(len(blocks) // batch, MAX_REQUESTS)
    chosen = blocks[: count * batch].reshape(count, batch, 2).copy()
    chosen[:, :, 1] *= io_size
    return chosen


class _Storage(Benchmark):
    operation: str  # READ (file → memory) or WRITE (memory → file)
    params = STORAGE  # kvbench/benches/declared.py

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        reason = backend_unavailable_reason(BACKENDS[params["backend"]])
        if reason:
            return reason
        kind = parse_kind(params["target"])
        if kind.name not in ("pageable", "numa", "pinned", "device"):
            return f"target={params['target']}: storage moves to host or GPU memory"
        if kind.name == "device" and params["backend"] == "posix":
            return "backend=posix moves files to host memory only; GPU targets take gds or gds_mt"
        return kind_unavailable_reason(kind)

    def validate(self, params: dict[str, Any]) -> None:
        if params["file_size"] % params["io_size"]:
            raise BadInput(f"bad io_size={params['io_size']}: file_size={params['file_size']} is not a multiple of it")
        if params["direct"] and params["io_size"] % 4096:
            raise BadInput(f"bad io_size={params['io_size']}: O_DIRECT needs a multiple of 4096 bytes")
        blocks = params["files"] * params["file_size"] // params["io_size"]
        if blocks < params["batch"]:
            raise BadInput(f"bad batch={params['batch']}: the files hold only {blocks} I/Os of io_size")
        check_directory(params["path"] or _tempdir(), params["files"] * params["file_size"])
        if parse_kind(params["target"]).name != "device":
            check_fits(params["io_size"] * params["batch"], f"target={params['target']}")

    def path(self, params: dict[str, Any]) -> list[Segment]:
        segments: list[Segment] = [("storage", mount_of(params["path"] or _tempdir())["device"], self.operation.lower())]
        target = parse_kind(params["target"])
        if target.name == "device":
            segments.append(("gpu_link", target.index or 0))
        return segments

    def prepare(self, params: dict[str, Any]) -> Prepared:
        with ExitStack() as stack:
            prepared = self._prepare(params, stack)
            cleanup = stack.pop_all()
        return replace(prepared, close=cleanup.close)

    def _prepare(self, params: dict[str, Any], stack: ExitStack) -> Prepared:
        """The case, with everything to free on `stack` (a failure part-way frees what was made)."""
        io, batch = params["io_size"], params["batch"]
        files = stack.enter_context(create_files(params["path"] or None, params["files"], params["file_size"],
                                                 bool(params["direct"]), writable=self.operation == "WRITE"))
        region = stack.enter_context(allocate(params["target"], io * batch))
        backend = BACKENDS[params["backend"]]
        engine = POSIX_APIS[params["api"]] if backend == "POSIX" else {}
        try:
            agent = make_agent(f"kvbench-storage-{os.getpid()}", [backend], params["threads"], backend_params=engine)
        except Exception as exc:
            raise RuntimeError(f"NIXL {backend} with api={params['api']} did not start: {exc}") from exc
        mem_type, base, device = nixl_memory(region)
        agent.register_memory(desc_array(np.array([base]), np.array([region.size_bytes]), device), mem_type)
        agent.register_memory([(0, files.size_bytes, fd, "") for fd in files.fds], "FILE")
        requests = plan_requests(params["files"], params["file_size"], io, batch, params["pattern"], params["seed"])
        local = desc_array(base + np.arange(batch, dtype=np.uint64) * io, np.full(batch, io), device)
        fds = np.array(files.fds, dtype=np.uint64)
        transfers = []
        for req in requests:
            transfers.append(PreparedTransfer(agent, self.operation, local, mem_type,
                                              desc_array(req[:, 1], np.full(batch, io), fds[req[:, 0]]), "FILE",
                                              agent.name, [backend]))
            stack.callback(transfers[-1].release)
        host = region.host_array
        written = pattern_bytes(region.size_bytes, seed=WRITE_SEED)  # what every write request carries
        if self.operation == "WRITE":
            if host is not None:
                host[:] = written
            else:
                region.device_array.set(written)  # a GPU source gets the pattern too, or zeros would match zeros
        state = {"next": 0, "last": 0}

        def run() -> None:
            i = state["next"]
            transfers[i].run()
            state["last"], state["next"] = i, (i + 1) % len(transfers)

        def buffer_bytes() -> np.ndarray:
            return host if host is not None else region.device_array.get()

        def poison_on_disk(chosen: np.ndarray) -> None:
            """Write the poison where the requests `chosen` (rows of (file, offset)) write."""
            junk = np.full(io, POISON, dtype=np.uint8).tobytes()
            for f, offset in chosen.reshape(-1, 2):
                fd = os.open(files.paths[int(f)], os.O_WRONLY)
                try:
                    os.pwrite(fd, junk, int(offset))
                finally:
                    os.close(fd)

        def reset() -> None:
            # `next` runs on: the engine's operation-by-operation proof then checks each request in turn
            if self.operation == "READ":
                region.poison()
            else:  # whichever request a sample ends on, its ranges held poison before it
                poison_on_disk(requests)

        def check() -> None:
            got = buffer_bytes()
            last = state["last"]
            for k, (f, offset) in enumerate(requests[last]):
                if self.operation == "READ":
                    have, want = got[k * io:(k + 1) * io], files.expected(int(f), int(offset), io)
                else:
                    have, want = files.read_back(int(f), int(offset), io), written[k * io:(k + 1) * io]
                if not np.array_equal(have, want):
                    bad = int(np.argmax(have != want))
                    raise IntegrityError(f"I/O {k} of request {last} (file {f}, offset {offset}) differs first at "
                                         f"byte {bad} of {io}")

        def verify() -> None:
            """Every prepared request, each on a poisoned destination, each I/O of it compared."""
            for i in range(len(transfers)):
                if self.operation == "READ":
                    region.poison()
                else:
                    poison_on_disk(requests[i])
                state["next"] = i
                run()
                check()
            state["next"] = 0

        metadata = {
            "nixl_backend": transfers[0].backend, "posix_api": params["api"], "requests": len(transfers),
            "direct": files.direct, "page_cache": not files.direct,
            "filesystem": files.mount, "buffers": {"target": region.describe()},
        }
        if not files.direct and params["direct"]:
            metadata["warning"] = f"{files.mount.get('fstype')} refused O_DIRECT: bytes came from the page cache"
        if backend in ("GDS", "GDS_MT"):
            compat = gds_compat_mode()
            metadata["gds_compat_mode"] = compat
            if compat is not False:
                metadata["warning"] = ("GDS may have run in compatibility mode (cuFile allow_compat_mode "
                                       f"{'on' if compat else 'unknown'}): bytes may have gone through host memory")

        def derive(m) -> dict[str, Any]:
            return {"telemetry": transfers[state["last"]].telemetry(), "iops": batch / m.summary.median}

        return Prepared(Workload(io * batch, run, reset, check, verify=verify), metadata, derive=derive)


def _tempdir() -> str:
    import tempfile

    return tempfile.gettempdir()


@register
class StorageRead(_Storage):
    id = "storage.read"
    description = "file to host/GPU memory through NIXL (POSIX, GDS), cold, O_DIRECT"
    operation = "READ"


@register
class StorageWrite(_Storage):
    id = "storage.write"
    description = "host/GPU memory to file through NIXL (POSIX, GDS), O_DIRECT"
    operation = "WRITE"
