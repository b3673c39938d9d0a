"""Who measures against whom, round by round, when N ranks run a pattern: a pure function of the
pattern and the world size, so every rank computes the same schedule without asking anyone.

A round is a list of directed pairs `(initiator, target)` that run at once; a rank is in at most
one pair of a round as initiator and, except in `ring` and `incast:K`, in at most one pair at all.

* `pairs`: every ordered pair. The circle method splits the N ranks into N/2 disjoint pairs per
  round, N − 1 rounds for an even N (N rounds with one rank sitting out for an odd N); each of
  those rounds is run twice, once each way, so 2 (N − 1) directed rounds (2 N for an odd N).
* `ring`: one round, i → i + 1 (mod N), every rank sending and receiving at once.
* `incast:K`: N rounds; in round d the K ranks after d send into rank d (the prefill → decode
  handoff into one decode node).
* `kbatch:K`: the directed rounds of `pairs` cut into rounds of at most K pairs, so exactly K
  disjoint pairs load the fabric at once; every ordered pair is covered.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvbench.errors import BadInput

PATTERNS = ("pairs", "ring", "incast:K", "kbatch:K")


@dataclass(frozen=True)
class Pattern:
    name: str  # pairs | ring | incast | kbatch
    k: int = 0  # incast: senders per receiver; kbatch: pairs at once

    def __str__(self) -> str:
        return f"{self.name}:{self.k}" if self.k else self.name


def parse_pattern(text: str, world: int) -> Pattern:
    """`pairs`, `ring`, `incast:K` or `kbatch:K`, checked against a world of `world` ranks; a bad
    one raises `BadInput` naming it."""
    name, _, k_text = text.strip().partition(":")
    if name in ("pairs", "ring") and not k_text:
        pattern = Pattern(name)
    elif name in ("incast", "kbatch") and k_text:
        try:
            k = int(k_text)
        except ValueError:
            raise BadInput(f"bad --pattern '{text}': K must be a whole number, as in {name}:2") from None
        limit = world - 1 if name == "incast" else world // 2
        if not 1 <= k <= limit:
            raise BadInput(f"bad --pattern '{text}': with {world} ranks K goes from 1 to {limit}"
                           f" ({'senders into one receiver' if name == 'incast' else 'disjoint pairs at once'})")
        pattern = Pattern(name, k)
    else:
        raise BadInput(f"bad --pattern '{text}': choose one of {', '.join(PATTERNS)}")
    if world < 2:
        raise BadInput(f"--pattern {text} needs at least 2 ranks; the launcher gave {world}")
    return pattern


def circle_rounds(world: int) -> list[list[tuple[int, int]]]:
    """The circle method: unordered pairs, each rank in at most one pair per round, every pair once;
    N − 1 rounds for an even N, N for an odd N (one rank sits each round out)."""
    ranks: list[int | None] = list(range(world)) + ([None] if world % 2 else [])
    n = len(ranks)
    rounds = []
    for _ in range(n - 1):
        pairs = [(ranks[i], ranks[n - 1 - i]) for i in range(n // 2)]
        rounds.append([(a, b) if a < b else (b, a) for a, b in pairs if a is not None and b is not None])
        ranks = [ranks[0], ranks[-1], *ranks[1:-1]]  # rank 0 stays, the others turn one place
    return rounds


def schedule(pattern: Pattern, world: int) -> list[list[tuple[int, int]]]:
    """The rounds of `pattern` over ranks 0 … world − 1, each a list of (initiator, target) pairs."""
    if pattern.name == "ring":
        return [[(i, (i + 1) % world) for i in range(world)]]
    if pattern.name == "incast":
        return [[((d + j) % world, d) for j in range(1, pattern.k + 1)] for d in range(world)]
    directed = []
    for unordered in circle_rounds(world):
        directed.append(list(unordered))
        directed.append([(b, a) for a, b in unordered])
    if pattern.name == "pairs":
        return directed
    return [one[i: i + pattern.k] for one in directed for i in range(0, len(one), pattern.k)]
