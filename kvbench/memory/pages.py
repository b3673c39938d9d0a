"""The page size of host buffers: `pages=base|thp|hugetlb-2M|hugetlb-1G`, asked for, then measured.

* `base`: the kernel's base pages (4 KiB on x86-64), with `MADV_NOHUGEPAGE`, so a kernel whose
  transparent huge pages are `always` cannot back the buffer with 2 MiB pages behind the case's back.
* `thp`: `MADV_HUGEPAGE` on a 2 MiB-aligned range (what numpy does for its large arrays); the kernel
  decides how much it backs with huge pages, so that is read back, never assumed.
* `hugetlb-2M`, `hugetlb-1G`: `MAP_HUGETLB` from the hugetlb pool of that size (reserved when mapped:
  a pool too small refuses the mapping, and the case is skipped with the pool's size).

Every buffer is mapped with a `PROT_NONE` page on each side, so the kernel never merges it with a
neighbouring mapping: `/proc/self/smaps` then gives the buffer's own `AnonHugePages` (THP) or
`Private_Hugetlb` (hugetlb), and `huge_fraction` is those bytes over the buffer's mapping.

The page size of a case is set once around its allocations (`CaseBuffers`), not passed through
every benchmark: every host buffer allocated inside takes it, and is listed for the result.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np

PAGES = ("base", "thp", "hugetlb-2M", "hugetlb-1G")
DEFAULT_PAGES = "base"  # what serving engines' KV pools get on a stock kernel: docs/measurement.md, "Page size"
BASE_BYTES = mmap.PAGESIZE
HUGE_BYTES = {"thp": 2 << 20, "hugetlb-2M": 2 << 20, "hugetlb-1G": 1 << 30}
SHORT_OF_ASKED = 0.9  # a huge-page buffer backed below this fraction of what it could be carries a warning

_MAP_HUGETLB = 0x40000
_MAP_HUGE_SHIFT = 26
_PROT_NONE = 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)

_asked: ContextVar[str] = ContextVar("kvbench_pages", default=DEFAULT_PAGES)
_listed: ContextVar[list[dict[str, Any]] | None] = ContextVar("kvbench_page_buffers", default=None)
_mapped: ContextVar[list[int] | None] = ContextVar("kvbench_hugetlb_mapped", default=None)  # the case's pages so far


def check_pages(text: str) -> str:
    """`text` if it names a page size, else ValueError naming it and the choices."""
    if text not in PAGES:
        raise ValueError(f"bad pages={text!r}: choose one of {', '.join(PAGES)}")
    return text


def asked() -> str:
    """The page size host buffers allocated now take (the case's `pages`, else the default)."""
    return _asked.get()


class CaseBuffers:
    """Sets the page size of every host buffer allocated inside `with`, and lists them (`buffers`:
    each buffer's record as `Region.describe` gives it). Enter it as often as the case allocates."""

    def __init__(self, pages: str | None) -> None:
        self.pages = check_pages(pages or DEFAULT_PAGES)
        self.buffers: list[dict[str, Any]] = []
        self.hugetlb_pages = [0]  # hugetlb pages every buffer of the case mapped so far
        self._tokens: list[tuple[Any, Any, Any]] = []

    def __enter__(self) -> CaseBuffers:
        self._tokens.append((_asked.set(self.pages), _listed.set(self.buffers), _mapped.set(self.hugetlb_pages)))
        return self

    def __exit__(self, *exc: object) -> None:
        pages_token, listed_token, mapped_token = self._tokens.pop()
        _mapped.reset(mapped_token)
        _listed.reset(listed_token)
        _asked.reset(pages_token)

    def record(self) -> dict[str, Any]:
        """What the result stores: the page size asked for, each host buffer's backing, and a
        warning naming every buffer backed short of what was asked (None when none was)."""
        short = [b["pages_warning"] for b in self.buffers if b.get("pages_warning")]
        return {"pages": self.pages, "buffers": [dict(b) for b in self.buffers],
                "warning": "; ".join(short) if short else None}


def list_buffer(facts: dict[str, Any]) -> None:
    """Add a host buffer's record to the case being prepared (none: outside a case, nothing kept)."""
    listed = _listed.get()
    if listed is not None:
        listed.append(facts)


def hugetlb_pool(huge_bytes: int, sys_root: str = "/") -> tuple[int, int] | None:
    """(pages in the pool, free pages) of the hugetlb pool of `huge_bytes` pages; None if there is none."""
    base = Path(sys_root, f"sys/kernel/mm/hugepages/hugepages-{huge_bytes // 1024}kB")
    try:
        return int((base / "nr_hugepages").read_text()), int((base / "free_hugepages").read_text())
    except (OSError, ValueError):
        return None


def thp_mode(sys_root: str = "/") -> str | None:
    """The selected word of /sys/kernel/mm/transparent_hugepage/enabled (`always`, `madvise`, `never`)."""
    try:
        text = Path(sys_root, "sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else None


def check_pool(size_bytes: int, what: str) -> None:
    """Refuse (`PoolRefused`: the case is skipped) host buffers of `size_bytes` in all (`what` names them, as a
    benchmark tells `memory.host.check_fits`) where the case asks for hugetlb pages and the pool has fewer free
    than they need: every buffer of the case counted, not one (issue 57 item 9)."""
    pages = asked()
    if not pages.startswith("hugetlb"):
        return
    reason = pages_unavailable_reason(pages, size_bytes, buffers=what)
    if reason:
        raise PoolRefused(reason)  # one argument: its text is the reason alone, no "[Errno 0]"


def pages_unavailable_reason(pages: str, size_bytes: int = 0, sys_root: str = "/", buffers: str = "") -> str | None:
    """Why host buffers of `size_bytes` (`buffers`: what they are, every buffer of the case; "": the size
    of one buffer, which the case maps at least once) cannot have `pages` here (None when they can)."""
    if pages == "thp":
        mode = thp_mode(sys_root)
        if mode == "never" or mode is None:
            return ("pages=thp: transparent huge pages are "
                    f"{'not built into this kernel' if mode is None else 'off (enabled = never)'}")
    if pages.startswith("hugetlb"):
        huge = HUGE_BYTES[pages]
        pool = hugetlb_pool(huge, sys_root)
        if pool is None:
            return f"pages={pages}: this kernel has no hugetlb pool of {huge >> 20} MiB pages"
        need = max(-(-size_bytes // huge), 1)
        if pool[1] < need:
            what = (f"at least {need} needed for the case's {size_bytes / (1 << 20):,.0f} MiB of host buffers ({buffers})" if buffers
                    else f"at least {need} needed for one buffer, and the case maps more than one" if size_bytes
                    else "none for the case's buffers")
            return (f"pages={pages}: the hugetlb pool of {huge >> 20} MiB pages has {pool[1]} free of {pool[0]}, "
                    f"{what} (root can set /sys/kernel/mm/hugepages/hugepages-{huge // 1024}kB/nr_hugepages)")
    return None


class PoolRefused(OSError):
    """The hugetlb pool could not give a mapping its pages (too small, or taken since it was checked):
    the case is skipped with this reason, never measured on other pages."""


class HostMapping:
    """`size_bytes` of anonymous private memory of page size `pages`, between two `PROT_NONE` pages
    (hugetlb: its own mapping, which nothing merges with). `array` is the buffer, untouched."""

    def __init__(self, size_bytes: int, pages: str) -> None:
        self.pages = check_pages(pages)
        self.size_bytes = size_bytes
        huge = HUGE_BYTES.get(pages)
        if pages.startswith("hugetlb"):
            self.length = -(-max(size_bytes, 1) // huge) * huge
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_HUGETLB | (huge.bit_length() - 1) << _MAP_HUGE_SHIFT
            mapped = _mapped.get()
            before = mapped[0] if mapped else 0
            try:
                self._map = mmap.mmap(-1, self.length, flags=flags)
            except OSError as exc:  # the pool shrank, or another process took its pages since the check
                raise PoolRefused(exc.errno, f"pages={pages}: the hugetlb pool refused {self.length} bytes "
                                             f"({os.strerror(exc.errno or 0)}); {_pool_words(huge)}, and this case "
                                             f"needs at least {before + self.length // huge} ({before} mapped by its "
                                             "buffers before this one)") from None
            if mapped:
                mapped[0] += self.length // huge
            self.offset = 0
        else:
            align = huge or BASE_BYTES
            self.length = -(-max(size_bytes, 1) // align) * align
            total = BASE_BYTES + (align - BASE_BYTES) + self.length + BASE_BYTES
            self._map = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            start = _address(self._map)
            self.offset = -(-(start + BASE_BYTES) // align) * align - start
            _protect_none(start, self.offset)
            _protect_none(start + self.offset + self.length, total - self.offset - self.length)
            self._map.madvise(mmap.MADV_HUGEPAGE if pages == "thp" else mmap.MADV_NOHUGEPAGE, self.offset, self.length)
        self.array = np.frombuffer(self._map, dtype=np.uint8, count=size_bytes, offset=self.offset)

    @property
    def address(self) -> int:
        return _address(self._map) + self.offset

    def backing(self) -> dict[str, Any]:
        """What the buffer's pages are, read from /proc/self/smaps (touch it first): `pages` asked,
        `huge_fraction` (bytes on huge pages over the mapping's bytes), `huge_page_bytes` (2 MiB or
        1 GiB; None for base), and `pages_warning` when a huge-page buffer is backed short."""
        huge_bytes, read = smaps_huge_bytes(self.address, self.length)
        fraction = min(1.0, huge_bytes / self.length) if read else None
        facts: dict[str, Any] = {"pages": self.pages, "huge_fraction": None if fraction is None else round(fraction, 4),
                                 "huge_page_bytes": HUGE_BYTES.get(self.pages)}
        if fraction is None:
            facts["pages_unknown"] = "no mapping of the buffer found in /proc/self/smaps"
        elif self.pages == "base" and fraction > 0:
            facts["pages_warning"] = f"pages=base buffer of {self.size_bytes} B has {fraction:.0%} on huge pages"
        elif self.pages != "base" and fraction < SHORT_OF_ASKED:
            facts["pages_warning"] = (f"pages={self.pages} buffer of {self.size_bytes} B: only {fraction:.0%} on huge "
                                      f"pages (the kernel could not back the rest: fragmented memory, or "
                                      f"THP defrag={_thp_defrag()})")
        return facts

    def close(self) -> None:
        self.array = None  # this mapping's own view: the last one, when the region's were dropped first
        try:
            self._map.close()
        except BufferError:
            pass  # a view is still alive somewhere; the mapping goes when it does


def smaps_huge_bytes(address: int, length: int, smaps: str = "/proc/self/smaps") -> tuple[int, bool]:
    """(bytes of [address, address + length) on huge pages — `AnonHugePages` plus `Private_Hugetlb`
    and `Shared_Hugetlb` of every mapping inside it —, whether any mapping there was found)."""
    end, total, found, inside = address + length, 0, False, False
    with open(smaps) as lines:
        for line in lines:
            head = line.split(None, 1)[0] if line.strip() else ""
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo < end and hi > address
                found = found or inside
            elif inside and head in ("AnonHugePages:", "Private_Hugetlb:", "Shared_Hugetlb:"):
                total += int(line.split()[1]) * 1024
    return total, found


def _pool_words(huge_bytes: int) -> str:
    pool = hugetlb_pool(huge_bytes)
    return "no such pool" if pool is None else f"the pool has {pool[1]} free of {pool[0]} pages"


def _thp_defrag(sys_root: str = "/") -> str | None:
    try:
        text = Path(sys_root, "sys/kernel/mm/transparent_hugepage/defrag").read_text()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else None


def _address(mapping: mmap.mmap) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(mapping))


def _protect_none(address: int, length: int) -> None:
    if length and _libc.mprotect(address, length, _PROT_NONE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mprotect of a guard page failed: {os.strerror(err)}")
