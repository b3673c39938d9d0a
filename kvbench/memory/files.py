"""Files for storage benchmarks: created with a known pattern, opened O_DIRECT when the
filesystem allows it, described (filesystem, device), and always removed.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kvbench.errors import BadInput
from kvbench.memory.pattern import fill_pattern, pattern_bytes

_LIVE: set[str] = set()


def _remove_leftovers() -> None:
    for path in list(_LIVE):
        Path(path).unlink(missing_ok=True)


atexit.register(_remove_leftovers)  # even when a run is interrupted


def mount_of(path: str) -> dict[str, str]:
    """Mount point, filesystem type and source device of the filesystem holding `path`."""
    target = os.path.realpath(path)
    best = {"mount": "/", "fstype": "?", "device": "?"}
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                device, mount, fstype, *_ = line.split()
                mount = mount.replace("\\040", " ")
                if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best["mount"]):
                    best = {"mount": mount, "fstype": fstype, "device": device}
    except OSError:
        pass
    return best


@dataclass
class TestFiles:
    """`count` files of `size_bytes` each under `directory`, filled with `fill_pattern(seed=index)`."""

    directory: str
    size_bytes: int
    paths: list[str]
    fds: list[int] = field(default_factory=list)
    direct: bool = True
    mount: dict[str, str] = field(default_factory=dict)

    def expected(self, index: int, offset: int, length: int) -> np.ndarray:
        """The bytes file `index` holds at [offset, offset + length) (`offset` a multiple of 8)."""
        return pattern_bytes(length, seed=index, offset=offset)

    def read_back(self, index: int, offset: int, length: int) -> np.ndarray:
        """What is on disk now, read through a plain (not O_DIRECT) descriptor."""
        fd = os.open(self.paths[index], os.O_RDONLY)
        try:
            return np.frombuffer(os.pread(fd, length, offset), dtype=np.uint8)
        finally:
            os.close(fd)

    def __enter__(self) -> TestFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        for path in self.paths:
            Path(path).unlink(missing_ok=True)
            _LIVE.discard(path)


def check_directory(directory: str, needed_bytes: int) -> None:
    """Refuse, before writing anything, a directory that is missing, unwritable or too full."""
    if not os.path.isdir(directory):
        raise BadInput(f"bad path '{directory}': not a directory")
    if not os.access(directory, os.W_OK):
        raise BadInput(f"bad path '{directory}': not writable")
    free = shutil.disk_usage(directory).free
    if needed_bytes > 0.9 * free:
        raise BadInput(f"bad path '{directory}': {needed_bytes} bytes of test files need more than 90% of "
                       f"the {free} bytes free there")


def create_files(directory: str | None, count: int, size_bytes: int, direct: bool, writable: bool) -> TestFiles:
    """Write the files, flush them out of the page cache, and open them for the benchmark."""
    directory = directory or tempfile.gettempdir()
    check_directory(directory, count * size_bytes)
    files = TestFiles(directory, size_bytes, [], mount=mount_of(directory))
    try:
        for index in range(count):
            # the pid in the name lets a later kvbench sweep the files of a process that was killed
            handle, path = tempfile.mkstemp(prefix=f"kvbench-{os.getpid()}-{index}-", suffix=".dat", dir=directory)
            files.paths.append(path)
            _LIVE.add(path)
            content = np.empty(size_bytes, dtype=np.uint8)
            fill_pattern(content, seed=index)
            with os.fdopen(handle, "wb") as f:
                f.write(content.data)
                f.flush()
                os.fsync(f.fileno())
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # cold: drop what writing cached
            os.close(fd)
        flags = (os.O_RDWR if writable else os.O_RDONLY)
        for path in files.paths:
            if direct:
                try:
                    files.fds.append(os.open(path, flags | os.O_DIRECT))
                    continue
                except OSError:
                    files.direct = False  # tmpfs and friends refuse O_DIRECT: the page cache serves
            files.fds.append(os.open(path, flags))
        if not direct:
            files.direct = False
    except BaseException:
        files.close()
        raise
    return files
