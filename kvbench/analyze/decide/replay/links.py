"""Each tier's link as a shared resource: restores queue on it in the order they become ready, write-backs on the
link of the other direction, and what the trace asks of each link per second of trace time.

The TTFT model (docs/replay.md): a request's restores start at its arrival; the legs of one tier run
one after the other (file → DRAM, then DRAM → GPU), different tiers' legs in parallel, and each link
serves one transfer at a time, first come first served, so a request waits behind earlier ones on a
busy link. Its misses are recomputed once its restores are done (no layer-wise overlap), each
request's prefill priced alone (no compute queue: the trace's traffic came from a whole serving
fleet, not one GPU). Write-backs start once the request is served; they delay no TTFT but queue on
their link, and their backlog is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np


@dataclass(frozen=True)
class LinkLoad:
    link: str
    direction: str  # restore | write-back
    gbps: float
    kind: str  # measured | spec
    bytes_moved: float
    utilisation: dict[str, float]  # p50, p99, max of each second's demand ÷ the link's capacity
    seconds_over: int  # seconds of trace time whose demand exceeded the link
    max_backlog_s: float  # the longest a transfer waited for the link
    demand: np.ndarray = field(repr=False, compare=False, default=None)  # each second's demand ÷ capacity


@numba.njit(cache=True)
def _fifo(ready, service):
    """One link serving jobs in order of readiness: when each finishes, and the longest wait."""
    finish = np.empty(len(ready))
    free, wait = -np.inf, 0.0
    for i in range(len(ready)):
        begin = max(ready[i], free)
        wait = max(wait, begin - ready[i])
        free = begin + service[i]
        finish[i] = free
    return finish, wait


def _serve(ready: np.ndarray, service: np.ndarray) -> tuple[np.ndarray, float]:
    order = np.argsort(ready, kind="stable")
    finish = np.empty(len(ready))
    done, wait = _fifo(ready[order], service[order])
    finish[order] = done
    return finish, float(wait)


def queue(arrival: np.ndarray, svc: np.ndarray, legs: np.ndarray, compute: np.ndarray, wsvc: np.ndarray,
          wlink: np.ndarray, nlinks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(restore seconds, TTFT seconds) per request and the longest wait per link.

    `svc[r, t, k]`: request r's seconds on leg k of tier t, whose link is `legs[t, k]` (-1: none);
    `wsvc[r, t]`: its write-back seconds into tier t on link `wlink[t]`; `compute[r]`: its prefill.
    A link serves its transfers in the order they become ready (a second leg once its first is done),
    one at a time; a link is resolved once every leg before its own is."""
    nreq, ntiers, nlegs = svc.shape
    chain = np.repeat(arrival.astype(np.float64)[:, None], ntiers, axis=1)  # when each tier's next leg may start
    backlog = np.zeros(max(nlinks, 1))
    pending = {(t, k) for t in range(ntiers) for k in range(nlegs) if legs[t, k] >= 0}
    while pending:
        free_cells = {c for c in pending if not any((c[0], j) in pending for j in range(c[1]))}
        whole = sorted({int(legs[c]) for c in free_cells
                        if all(d in free_cells for d in pending if legs[d] == legs[c])})
        link = whole[0] if whole else int(legs[min(free_cells, key=lambda c: c[1])])
        cells = sorted(c for c in free_cells if legs[c] == link)
        jobs = [(t, np.nonzero(svc[:, t, k] > 0)[0], k) for t, k in cells]
        ready = np.concatenate([chain[r, t] for t, r, _ in jobs])
        service = np.concatenate([svc[r, t, k] for t, r, k in jobs])
        finish, wait = _serve(ready, service)
        backlog[link] = max(backlog[link], wait)
        at = 0
        for t, r, _ in jobs:
            chain[r, t] = finish[at:at + len(r)]
            at += len(r)
        pending -= set(cells)
    restore = chain.max(axis=1) - arrival
    ttft = restore + compute
    served = arrival + ttft
    for link in sorted({int(x) for x in wlink if x >= 0}):
        jobs = [(t, np.nonzero(wsvc[:, t] > 0)[0]) for t in range(ntiers) if wlink[t] == link]
        ready = np.concatenate([served[r] for _, r in jobs])
        service = np.concatenate([wsvc[r, t] for t, r in jobs])
        if len(ready):
            backlog[link] = max(backlog[link], _serve(ready, service)[1])
    return restore, ttft, backlog


def per_second(arrival: np.ndarray, seconds: np.ndarray, span_s: int) -> np.ndarray:
    """Busy seconds the requests arriving in each second of trace time ask of a link."""
    return np.bincount(np.floor(arrival).astype(np.int64), weights=seconds, minlength=span_s)[:span_s]


def load(link: str, direction: str, gbps: float, kind: str, bytes_moved: float, demand: np.ndarray,
         backlog_s: float) -> LinkLoad:
    return LinkLoad(link, direction, gbps, kind, float(bytes_moved),
                    {"p50": float(np.percentile(demand, 50)), "p99": float(np.percentile(demand, 99)),
                     "max": float(demand.max())}, int((demand > 1.0).sum()), float(backlog_s), demand)
