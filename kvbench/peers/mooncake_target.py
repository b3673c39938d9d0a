"""The far side's Mooncake engines: a peer (in this process or another) registers the buffer it
already serves with a Transfer Engine when an initiator asks, and answers with the segment name to
reach it by. The ask and the answer travel as the peer's other control messages do (NIXL
notifications; kvbench/cluster/serve.py): `MOONCAKE?<address>|<metadata>|<protocol>|<device>|<timeout s>`
→ `MOONCAKE:<segment>`, or `MOONCAKE-ERR:<reason>` when the engine cannot start or register it."""

from __future__ import annotations

from kvbench.backends.mooncake import Engine
from kvbench.errors import one_line
from kvbench.memory.nixl_regions import nixl_memory

ASK, ANSWER, REFUSAL = b"MOONCAKE?", b"MOONCAKE:", b"MOONCAKE-ERR:"


def ask(address: str, metadata: str, protocol: str, device: str, timeout_s: float) -> bytes:
    """The message that asks a peer reached at `address` for a Mooncake segment over its buffer."""
    return ASK + "|".join([address, metadata, protocol, device, str(int(timeout_s))]).encode()


class MooncakeTargets:
    """The engines one serving side runs, one per (address, metadata, protocol, device), each
    started on its first ask and kept for the next initiator."""

    def __init__(self) -> None:
        self._engines: dict[tuple[str, ...], Engine] = {}

    def answer(self, region, message: bytes) -> bytes:
        """The answer to an `ask` for `region` (a host or GPU buffer)."""
        try:
            address, metadata, protocol, device, timeout_s = message[len(ASK):].decode().split("|")
            key = (address, metadata, protocol, device)
            if key not in self._engines:
                self._engines[key] = Engine(address, metadata, protocol, device, float(timeout_s))
            engine = self._engines[key]
            _, base, _ = nixl_memory(region)
            engine.register(base, region.size_bytes)
            return ANSWER + engine.segment.encode()
        except Exception as exc:  # this initiator's case fails with the reason; the side serves on
            return REFUSAL + one_line(f"{type(exc).__name__}: {exc}").encode()

    def forget(self, region) -> None:
        """Unregister `region` from every engine (before it is freed)."""
        _, base, _ = nixl_memory(region)
        for engine in self._engines.values():
            engine.unregister(base)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()


def segment_from(answer: bytes, peer: str) -> str:
    """The segment in a peer's answer, or a one-line RuntimeError with its reason."""
    text = answer.decode(errors="replace")
    if answer.startswith(REFUSAL):
        raise RuntimeError(f"peer '{peer}' could not serve its buffer over Mooncake: {text[len(REFUSAL):]}")
    return text[len(ANSWER):]
