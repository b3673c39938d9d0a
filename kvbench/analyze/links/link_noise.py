"""Two launches of a cluster run judged against themselves: which link drops stand out of the launch's
own link-to-link noise (`compare cluster:A cluster:B`, analyze/links/link_compare.py).

On a shared box every link of a launch is timed at another moment of the box's load. Measured on the
2-core dev VM (4 network namespaces, net.write 64 KiB × 8, load average near 15): between two launches
with nothing changed single links moved 4-15× up or down on the median and on the fast end, while a
link behind a tbf-limited veth (20 mbit/s) dropped ~130×. Each link is compared on its own first (the
case rule, analyze/regress/compare.py: ranges apart, beyond its allowance, contention weighed); a `slower`
link is then weighed against its launch:

- **Hosts.** One slow host (a NIC, a cable, a shaped veth) slows each link it sends on (or receives
  on) together. For each host's outgoing and incoming links (2 or more), ln(new / base) of each link
  ok in both launches (on the estimator its verdict judged): the group's median less the median of
  the other links is judged against the noise of a median of that many links, from the other links'
  robust sd (1.4826 × MAD; 1.2533 × sd / √m): below −`K` of it, the group stands out.
- **Common mode.** Over the links outside the groups that stand out: their median change is the
  launch's common-mode shift, each link's *residual* its change less that shift, and the residuals'
  robust sd the launch's link-to-link noise.
- **Links.** A link stands out when it is in a group that stands out, or its own residual is below
  −`K` sd.
- **Contention.** The noise is never taken below the robust sd of all links, and a drop (a group's
  median, a link's residual) within the slowdown its new results' recorded contention plausibly
  causes (analyze/regress/contended.py, at most 8×) never stands out: on that box a link measured at a busy
  moment drops that much beside its neighbours measured at a quiet one.

A `slower` link that stands out stays `slower`. One that does not is the launch's noise: `ambiguous`
(shown, not gated) — unless every link dropped together: a common drop beyond the 5 % floor makes it
`ambiguous (contended)` (INCOMPLETE: the box's load or the code's, re-measure), and a common drop
beyond the most contention explains (`MOST_EXPLAINED`, 8×) keeps it `slower`: a slowdown of every link
is never hidden as noise. A matrix of fewer than `MIN_LINKS` links ok in both is left to the case rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np

from kvbench.analyze.regress.compare import Comparison
from kvbench.analyze.regress.contended import AMBIGUOUS_CONTENDED, MOST_EXPLAINED
from kvbench.analyze.links.link_matrix import PAIR_KEYS

K = 3.0  # robust standard deviations: the fleet's outlier rule (analyze/fleet.py)
MIN_LINKS = 4  # links ok in both launches needed to tell a common shift from one link's change
FLOOR_LN = float(np.log(0.95))  # a common shift smaller than 5 % is no common drop
MEDIAN_SE = 1.2533  # the standard error of a median of m normal values is 1.2533 × sd / √m


@dataclass(frozen=True)
class LaunchNoise:
    """One matrix's links between two launches, ln units: the common shift, the noise, what stands out."""

    shift: float  # median ln(new / base) over the links ok in both, outside a host group that stands out
    sd: float  # robust sd of those links' residuals
    residual: dict[tuple[str, str], float]  # (src, dst) → ln change less the shift
    standing_out: frozenset[tuple[str, str]]  # links whose drop is beyond the noise
    hosts: tuple[str, ...]  # "n2 sending", "n1 receiving": host groups that stand out


def _ln_change(c: Comparison) -> float | None:
    """ln(new / base) of the estimator the link's verdict judged (the fast end where contention could
    fake the drop); None for a link not ok in both."""
    judged = c.judged_change if c.judged_change is not None else c.change
    return float(np.log1p(judged)) if judged is not None and judged > -1 else None


def _robust_sd(values: list[float]) -> float:
    return 1.4826 * float(np.median(np.abs(values))) if values else 0.0


def launch_noise(links: dict[tuple[str, str], float], k: float = K,
                 explains: dict[tuple[str, str], float] | None = None) -> LaunchNoise | None:
    """The noise of one matrix from its links' ln changes ((src, dst) → ln(new / base)); None for fewer
    than `MIN_LINKS` links. `explains`: each link's plausible slowdown from the contention its new
    result recorded (analyze/regress/contended.py; 1 when clean): a drop within it never stands out. A host
    group is judged against the links outside it (its own slowed links would widen the noise they are
    judged by), single links against the links outside every group that stands out; the noise is never
    taken below the spread of all links (one launch's quiet links say little of the next link)."""
    if len(links) < MIN_LINKS:
        return None
    room = {pair: float(np.log((explains or {}).get(pair, 1.0))) for pair in links}
    everyone = _robust_sd([ln - float(np.median(list(links.values()))) for ln in links.values()])
    grouped: set[tuple[str, str]] = set()
    named = []
    for side, word in ((0, "sending"), (1, "receiving")):
        for host in sorted({pair[side] for pair in links}):
            group = [pair for pair in links if pair[side] == host]
            rest = [ln for pair, ln in links.items() if pair[side] != host]
            if len(group) < 2 or len(rest) < MIN_LINKS:
                continue
            centre = float(np.median(rest))
            sd = max(_robust_sd([ln - centre for ln in rest]), everyone)
            middle = float(np.median([links[p] for p in group])) - centre
            if (middle < 0 and (sd == 0 or middle < -k * MEDIAN_SE * sd / np.sqrt(len(group)))
                    and middle < -float(np.median([room[p] for p in group]))):
                grouped.update(group)
                named.append(f"{host} {word}")
    rest = {pair: ln for pair, ln in links.items() if pair not in grouped}
    if len(rest) < MIN_LINKS:
        rest = links
    shift = float(np.median(list(rest.values())))
    sd = max(_robust_sd([ln - shift for ln in rest.values()]), everyone)
    residual = {pair: ln - shift for pair, ln in links.items()}
    alone = {pair for pair, r in residual.items() if r < 0 and (sd == 0 or r < -k * sd) and r < -room[pair]}
    return LaunchNoise(shift, sd, residual, frozenset(grouped | alone), tuple(named))


def _matrix_of(c: Comparison) -> tuple[str, str]:
    return c.bench, json.dumps({k: v for k, v in c.params.items() if k not in PAIR_KEYS}, sort_keys=True, default=str)


def _pair(c: Comparison) -> tuple[str, str]:
    return str(c.params.get("src_host")), str(c.params.get("dst_host"))


def noise_by_matrix(comparisons: list[Comparison], k: float = K,
                    explains: dict[str, float] | None = None) -> dict[tuple[str, str], LaunchNoise]:
    """Each matrix's `LaunchNoise` (those with at least `MIN_LINKS` links ok in both launches);
    `explains[case]` the plausible slowdown of the new result of that case id."""
    groups: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    rooms: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    for c in comparisons:
        ln = _ln_change(c)
        if ln is not None:
            groups.setdefault(_matrix_of(c), {})[_pair(c)] = ln
            rooms.setdefault(_matrix_of(c), {})[_pair(c)] = (explains or {}).get(c.case, 1.0)
    return {key: found for key, links in groups.items()
            if (found := launch_noise(links, k, rooms[key])) is not None}


def weigh_link_noise(comparisons: list[Comparison], k: float = K,
                     explains: dict[str, float] | None = None) -> list[Comparison]:
    """`comparisons` with each `slower` link that does not stand out of its launch's noise taken back
    (module docstring); every other comparison as it was. `explains[case]`: the plausible slowdown of
    the new result of that case id (`plausible_slowdown`; 1 or absent when it was clean)."""
    noise = noise_by_matrix(comparisons, k, explains)
    out = []
    for c in comparisons:
        found = noise.get(_matrix_of(c))
        if c.verdict != "slower" or found is None or _pair(c) not in found.residual:
            out.append(c)
            continue
        said = _words(found, _pair(c), k)
        if _pair(c) in found.standing_out or found.shift <= -float(np.log(MOST_EXPLAINED)):
            out.append(replace(c, note=f"{c.note}; {said}: beyond it"))
            continue
        common_drop = found.shift < FLOOR_LN
        out.append(replace(c, verdict=AMBIGUOUS_CONTENDED if common_drop else "ambiguous", note=(
            f"{c.note}; {said}: within it, "
            + ("and every link dropped together: the box's load or the code's, re-measure" if common_drop else
               "the launch's own link-to-link noise, not this link's change"))))
    return out


def _words(found: LaunchNoise, pair: tuple[str, str], k: float) -> str:
    hosts = f"; standing out: {', '.join(found.hosts)}" if found.hosts else ""
    return (f"links moved {np.expm1(found.shift):+.0%} together (common mode), this one "
            f"{np.expm1(found.residual[pair]):+.0%} beside them; link-to-link noise ±{found.sd:.2f} ln "
            f"({k:g} sd: {np.expm1(-k * found.sd):+.0%}){hosts}")
