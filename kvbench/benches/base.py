"""What a benchmark declares, and the prepared case it hands to the measurement engine."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from kvbench.backends.cuda import free_pools, make_current
from kvbench.benches.params import Param
from kvbench.errors import unknown_name
from kvbench.hardware.path import Segment
from kvbench.measure.engine import Pair, Workload
from kvbench.measure.measurement import Measurement


@dataclass
class Prepared:
    """A case ready to measure: its workload, what it records, and how to free its memory."""

    workload: Workload
    metadata: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], None] = lambda: None
    derive: Callable[[Measurement], dict[str, Any]] = lambda m: {}  # figures from the samples, before close


class Benchmark(ABC):
    id: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[dict[str, Param]]

    def unavailable_reason(self) -> str | None:
        """None when this benchmark can run on this host, else why not (one line)."""
        return None

    def case_unavailable_reason(self, params: dict[str, Any]) -> str | None:
        """Why this particular case cannot run here (e.g. its memory kind needs CUDA)."""
        return self.unavailable_reason()

    def canonical_params(self, given: dict[str, Any]) -> dict[str, Any]:
        """Defaults filled in and every value parsed; unknown names raise `BadInput`."""
        for name in given:
            if name not in self.params:
                raise unknown_name(f"parameter of {self.id}", name, self.params)
        return {name: spec.parse(name, given.get(name, spec.default)) for name, spec in self.params.items()}

    def validate(self, params: dict[str, Any]) -> None:
        """Cross-parameter checks on canonical params; raise `BadInput` (default: none)."""

    @abstractmethod
    def path(self, params: dict[str, Any]) -> list[Segment]:
        """The links this case's bytes cross, for the path model's peak."""

    @abstractmethod
    def prepare(self, params: dict[str, Any]) -> Prepared:
        """Allocate memory and bind an executor for these canonical params."""


def built_in_stack(build: Callable[[ExitStack], Prepared]) -> Prepared:
    """`build(stack)`, where everything that needs closing is registered on `stack` as it is made:
    if any later step of `build` raises (a fill, a copy, the timer), all of it is closed at once;
    otherwise the case's `close` closes it (after the Prepared's own close)."""
    with ExitStack() as stack:
        prepared = build(stack)
        inner, owned = prepared.close, stack.pop_all()

    def close() -> None:
        try:
            inner()
        finally:
            owned.close()

    return replace(prepared, close=close)


def prepared_on_gpu(gpu: int, build: Callable[[], Prepared]) -> Prepared:
    """`build()` with GPU `gpu` current, which stays current until the case closes (see
    `make_current`); the previous device comes back then, or at once if `build` fails."""
    restore = make_current(gpu)
    try:
        prepared = build()
    except BaseException:
        restore()
        raise
    inner_close = prepared.close

    def close() -> None:
        try:
            inner_close()
        finally:
            try:
                free_pools()
            finally:
                restore()

    return replace(prepared, close=close)


def paired_with(prepared: Prepared, against: dict[str, Any], build: Callable[[], Prepared]) -> Prepared:
    """`prepared` with the workload `build()` makes as the other side of its ratio (its own pair
    dropped: only the case's is timed); the other side closes with the case."""
    try:
        other = build()
    except BaseException:
        prepared.close()
        raise
    other.workload.pair = None
    prepared.workload.pair = Pair(against, other.workload)
    inner = prepared.close

    def close() -> None:
        try:
            inner()
        finally:
            other.close()

    return replace(prepared, close=close)
