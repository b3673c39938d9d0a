"""The descriptor list: a flat table of `(src_offset, dst_offset, length)` rows, in bytes.

Every executor consumes the same table, so one layout generator feeds all of them and the
host reference can check any executor's output byte for byte (DESIGN.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvbench.errors import BadInput

DESCRIPTOR_DTYPE = np.dtype([("src_offset", "<u8"), ("dst_offset", "<u8"), ("length", "<u8")])


@dataclass(frozen=True, eq=False)
class DescriptorList:
    """An immutable table of copies; offsets and lengths in bytes."""

    rows: np.ndarray

    def __post_init__(self) -> None:
        if self.rows.dtype != DESCRIPTOR_DTYPE or self.rows.ndim != 1:
            raise TypeError(f"descriptor rows must be a 1-D array of {DESCRIPTOR_DTYPE}")
        self.rows.flags.writeable = False

    @classmethod
    def from_arrays(cls, src_offset: np.ndarray, dst_offset: np.ndarray, length: np.ndarray) -> DescriptorList:
        """Rows from three equally long integer arrays (bytes)."""
        rows = np.empty(len(length), dtype=DESCRIPTOR_DTYPE)
        rows["src_offset"] = src_offset
        rows["dst_offset"] = dst_offset
        rows["length"] = length
        return cls(rows)

    @classmethod
    def contiguous(cls, length: int, src_offset: int = 0, dst_offset: int = 0) -> DescriptorList:
        """One copy of `length` bytes: the ideal case every fragmented layout is compared to."""
        return cls.from_arrays(np.array([src_offset]), np.array([dst_offset]), np.array([length]))

    @classmethod
    def fragments(cls, total_bytes: int, fragment_bytes: int) -> DescriptorList:
        """A contiguous copy of `total_bytes` cut into fragments of `fragment_bytes` (the last may be short)."""
        if fragment_bytes <= 0:
            raise BadInput(f"bad fragment {fragment_bytes}: must be a positive byte count")
        starts = np.arange(0, total_bytes, fragment_bytes, dtype=np.uint64)
        lengths = np.minimum(fragment_bytes, total_bytes - starts).astype(np.uint64)
        return cls.from_arrays(starts, starts, lengths)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def src_offset(self) -> np.ndarray:
        return self.rows["src_offset"]

    @property
    def dst_offset(self) -> np.ndarray:
        return self.rows["dst_offset"]

    @property
    def length(self) -> np.ndarray:
        return self.rows["length"]

    @property
    def total_bytes(self) -> int:
        """Bytes moved by one application of the list (each copy counted once)."""
        return int(self.length.sum())

    def validate(self, src_size: int, dst_size: int) -> None:
        """Raise `BadInput` unless every row is non-empty, in bounds, and no destinations overlap.

        Sources may overlap: reading a byte twice is legal, writing it twice is a layout bug.
        """
        if len(self) == 0:
            raise BadInput("descriptor list is empty")
        length = self.length
        if (length == 0).any():
            raise BadInput(f"descriptor row {int(np.argmax(length == 0))} has length 0")
        src_end = self.src_offset + length
        dst_end = self.dst_offset + length
        if (src_end > src_size).any():
            row = int(np.argmax(src_end > src_size))
            raise BadInput(f"descriptor row {row} reads past the source ({int(src_end[row])} > {src_size} bytes)")
        if (dst_end > dst_size).any():
            row = int(np.argmax(dst_end > dst_size))
            raise BadInput(f"descriptor row {row} writes past the destination ({int(dst_end[row])} > {dst_size} bytes)")
        order = np.argsort(self.dst_offset, kind="stable")
        ends = dst_end[order][:-1]
        starts = self.dst_offset[order][1:]
        if (ends > starts).any():
            at = int(np.argmax(ends > starts))
            raise BadInput(
                f"descriptor rows {int(order[at])} and {int(order[at + 1])} write overlapping destination bytes"
            )

    def split(self, max_length: int) -> DescriptorList:
        """The same copies with every row longer than `max_length` cut into pieces of at most that size.

        Used to spread one large copy over threads and to choose the copy primitive's block size.
        """
        if max_length <= 0:
            return self
        length = self.length
        pieces = ((length + np.uint64(max_length - 1)) // np.uint64(max_length)).astype(np.int64)
        if (pieces == 1).all():
            return self
        row = np.repeat(np.arange(len(self)), pieces)
        first = np.cumsum(pieces) - pieces
        within = (np.arange(int(pieces.sum())) - np.repeat(first, pieces)).astype(np.uint64)
        offset = within * np.uint64(max_length)
        piece_len = np.minimum(np.uint64(max_length), length[row] - offset)
        return DescriptorList.from_arrays(
            self.src_offset[row] + offset, self.dst_offset[row] + offset, piece_len
        )

    def coalesce(self) -> DescriptorList:
        """Merge each row into the previous one where both source and destination continue it."""
        if len(self) < 2:
            return self
        src, dst, length = self.src_offset, self.dst_offset, self.length
        continues = (src[1:] == src[:-1] + length[:-1]) & (dst[1:] == dst[:-1] + length[:-1])
        starts = np.flatnonzero(np.concatenate(([True], ~continues)))
        if len(starts) == len(self):
            return self
        return DescriptorList.from_arrays(src[starts], dst[starts], np.add.reduceat(length, starts))

    def split_even(self, parts: int, align: int = 4096) -> DescriptorList:
        """Cut rows so that the list has at least `parts` rows of similar size (for `parts` threads)."""
        if parts <= 1 or len(self) >= parts * 4:
            return self
        target = -(-self.total_bytes // parts)
        target = -(-target // align) * align
        return self.split(max(target, align))


def apply_numpy(descriptors: DescriptorList, src: np.ndarray, dst: np.ndarray) -> None:
    """The oracle: apply `descriptors` with plain numpy slicing, one row at a time.

    Slow by design and obviously correct; tests compare every executor against it.
    """
    for s, d, n in descriptors.rows.tolist():
        dst[d : d + n] = src[s : s + n]
