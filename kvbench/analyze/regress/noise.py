"""A case's between-run noise and the change it allows (kvbench/analyze/regress/compare.py says how a verdict
uses them). Rates are GB/s; noise and allowances are in ln units (a relative sd, |ln(new / base)|).

The allowance is 3 sd of the change between two runs, each varying by the between-run noise (so
their difference by √2 × it), capped at a halving. Calibrated against measured runs, not assumed:
benchmarks/compare_power.py on a quiet 2-vCPU VM found a test of the new median against the history's
MAD-tight level gating 9-25 % of identical pairs (a VM's level drifts between runs), and 3 × the noise
without √2 one pair in eight. On 3 December 2026 (11 runs of its 6-case suite, quiet, the same VM) 3 of 10
identical pairs still exited 1: one on the assumed allowance (no history yet; a 4 MiB copy moved
14.2 %), two on a noise estimated from 3 and 4 runs that happened to agree (0.7 % and 4.1 %, the cases
varying by 6–7 % over all 11). Hence the noise's 80 % upper bound (`noise_upper_factor`) and, under
MAD_FROM runs, never an allowance below the assumed one.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

THRESHOLD = 0.05  # the practical floor
ASSUMED_BETWEEN_RUN = 0.15  # allowance while a case has fewer than MIN_HISTORY earlier runs
MIN_HISTORY = 3
NOISE_MULTIPLE = 3.0  # a change must exceed 3 sd of the change between two runs
MAX_ALLOWANCE = math.log(2.0)  # the cap: runs that vary beyond it are too noisy to gate (issue 57 item 0)
TOO_NOISY_WORDS = "baseline too noisy to gate: re-take it on a quiet box"

# Expected range of n normal values, in standard deviations (d2 of control charts; Tippett 1925).
D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970, 10: 3.078, 11: 3.173,
      12: 3.258, 13: 3.336, 14: 3.407, 15: 3.472, 16: 3.532, 17: 3.588, 18: 3.640, 19: 3.689, 20: 3.735}
MAD_FROM = 5  # under 5 runs the MAD is no estimate (two of three agreeing make it zero)

# A noise estimated from few runs is itself uncertain: three runs that happened to agree give a sd far
# below the case's (on a quiet 2-vCPU VM, 0.7 % from 3 runs for a case whose 11 runs vary by 6 %, which
# then gated a 7.7 % move of identical code). The allowance therefore uses the one-sided 80 % upper
# confidence bound of the sd, sqrt(df / chi2_0.20(df)) × the estimate with df = runs - 1: ×2.12 from
# 3 runs, ×1.56 from 5, ×1.27 from 11, ×1.18 from 20 (scipy.stats.chi2.ppf; beyond 20 runs the
# Wilson–Hilferty approximation). More runs, a tighter allowance.
NOISE_UPPER = {3: 2.117, 4: 1.728, 5: 1.558, 6: 1.461, 7: 1.398, 8: 1.353, 9: 1.320, 10: 1.293, 11: 1.272,
               12: 1.255, 13: 1.240, 14: 1.227, 15: 1.216, 16: 1.206, 17: 1.198, 18: 1.190, 19: 1.183, 20: 1.177}
UPPER_Z = 0.8416  # the normal quantile of the 80 % bound, for the approximation beyond the table


def noise_upper_factor(runs: int) -> float:
    """What the sd estimated from `runs` runs is multiplied by to reach its 80 % upper confidence bound
    (1.0 under MIN_HISTORY runs, where no estimate is made)."""
    if runs < MIN_HISTORY:
        return 1.0
    if runs in NOISE_UPPER:
        return NOISE_UPPER[runs]
    df = runs - 1
    q = df * (1 - 2 / (9 * df) - UPPER_Z * (2 / (9 * df)) ** 0.5) ** 3  # Wilson–Hilferty chi2_0.20(df)
    return float((df / q) ** 0.5)


# A handful of scalars per case: the standard library's math, not numpy's arrays (which a command reading a
# small database would load only for this).
def _logs(medians: list[float]) -> list[float]:
    return [math.log(m) for m in medians if m and m > 0]


def _range_sd(logs: list[float]) -> float | None:
    """The sd the runs' range shows: range / d2(n); None under 2 runs. Beyond 20 runs the d2 of 20
    overstates the sd a little: the cautious side for a CI gate."""
    return (max(logs) - min(logs)) / D2[min(len(logs), max(D2))] if len(logs) >= 2 else None


def _mad_sd(logs: list[float]) -> float:
    middle = statistics.median(logs)
    return 1.4826 * statistics.median(abs(x - middle) for x in logs)


def between_run_noise(medians: list[float]) -> float | None:
    """Relative spread of a case's medians over runs, as one standard deviation of their logarithms;
    never below what the runs' range shows (range / d2(n)), and from MAD_FROM runs on the larger of
    that and 1.4826 × their MAD. None with fewer than MIN_HISTORY runs."""
    logs = _logs(medians)
    if len(logs) < MIN_HISTORY:
        return None
    from_range = _range_sd(logs)
    return from_range if len(logs) < MAD_FROM else max(from_range, _mad_sd(logs))


def pair_spread(base_runs: int = 1) -> float:
    """How many times the between-run noise the change from a base to one new run varies by: √2 from one
    base run, √(1 + v(k)) from the median of k (v(k): `median_variance`; 1.204 for 3 runs)."""
    return float((1.0 + median_variance(base_runs)) ** 0.5)


def median_variance(runs: int) -> float:
    """The variance of the median of `runs` normal values, in units of one value's variance (1 for one
    run, 0.5 for two, 0.449 for three; beyond ten the asymptotic π / 2k, a little above the exact)."""
    exact = {1: 1.0, 2: 0.5, 3: 0.449, 4: 0.298, 5: 0.287, 6: 0.215, 7: 0.211, 8: 0.168, 9: 0.166, 10: 0.138}
    return exact.get(runs, math.pi / (2 * max(runs, 1)))


def uncapped_allowance(noise: float | None, threshold: float = THRESHOLD, medians: list[float] = (),
                       base_runs: int = 1) -> float:
    """`allowance` before its cap at a halving: what the case's runs say a change must exceed. Where it
    is beyond the cap (`too_noisy`), a drop of the threshold's size could not have been told from the noise."""
    if noise is not None:
        runs = len(_logs(list(medians)))
        wide = NOISE_MULTIPLE * pair_spread(base_runs) * noise * noise_upper_factor(runs)
        if runs < MAD_FROM:  # a few runs that agree can widen the assumed allowance, never narrow it
            wide = max(wide, ASSUMED_BETWEEN_RUN)
    else:
        seen = _range_sd(_logs(list(medians)))
        wide = max(ASSUMED_BETWEEN_RUN, NOISE_MULTIPLE * pair_spread(base_runs) * seen if seen is not None else 0.0)
    return max(threshold, wide)


def allowance(noise: float | None, threshold: float = THRESHOLD, medians: list[float] = (),
              base_runs: int = 1) -> float:
    """The |ln(new / base)| above which a case whose ranges are apart is slower or faster: 3 sd of the
    change between two runs that each vary by the between-run noise (3 × √2 × the noise, at the 80 %
    upper bound of what the runs in `medians` say it is: `noise_upper_factor`; √2 becomes `pair_spread`
    where the base is the median of `base_runs` runs, kvbench/analyze/regress/pooled.py), or without it
    the assumed allowance — never below what two earlier runs' spread already shows (`medians`) — and
    never under the floor; never above a halving (MAX_ALLOWANCE). A case whose runs put it beyond the
    cap is `too_noisy` to judge: the cap no longer means a drop would be seen (issue 57 item 0)."""
    return min(MAX_ALLOWANCE, uncapped_allowance(noise, threshold, medians, base_runs))


def too_noisy(noise: float | None, threshold: float = THRESHOLD, medians: list[float] = (), base_runs: int = 1) -> bool:
    """Whether the case's runs vary so much that its allowance is beyond a halving: no drop of the
    threshold's size, nor a halving, could be told from its noise here."""
    return uncapped_allowance(noise, threshold, medians, base_runs) > MAX_ALLOWANCE


@dataclass(frozen=True)
class Allowance:
    """The one allowance of a case against a named base (issue 57 item 10): every output that states
    how far a case may move (`compare`, the report, the exports, `history`, the `--repeat` table) is one
    of these, from `case_allowance`, and says which base it is against."""

    ln: float  # |ln(new / base)| beyond which the case is slower or faster (capped at a halving)
    uncapped_ln: float
    noise: float | None  # the between-run noise (relative sd), None: assumed
    runs: int  # the earlier runs it came from
    base_runs: int  # how many runs the base is the median of

    @property
    def too_noisy(self) -> bool:
        return self.uncapped_ln > MAX_ALLOWANCE

    @property
    def base(self) -> str:
        return "one base run" if self.base_runs <= 1 else f"the median of {self.base_runs} base runs"

    @property
    def basis(self) -> str:
        return f"{self.runs} earlier runs" if self.noise is not None else "assumed: fewer than 3 earlier runs"

    @property
    def words(self) -> str:
        """"a drop beyond −13.9 % gates (against one base run)", or, where the runs vary beyond a halving,
        that the baseline is too noisy to gate: every output states the allowance so."""
        if self.too_noisy:
            return f"{TOO_NOISY_WORDS} (its runs vary beyond a halving; against {self.base})"
        return f"{allowance_words(self.ln)} (against {self.base})"


def case_allowance(history: list[float] | None, threshold: float = THRESHOLD, base_runs: int = 1) -> Allowance:
    """The allowance of one case against a base that is the median of `base_runs` runs, from the fast
    ends of its earlier runs (`history`): the one function every output calls (issue 57 item 10)."""
    history = list(history or [])
    noise = between_run_noise(history)
    return Allowance(allowance(noise, threshold, history, base_runs),
                     uncapped_allowance(noise, threshold, history, base_runs), noise, len(_logs(history)),
                     max(base_runs, 1))


def allowed_drop(allowance_ln: float) -> float:
    """The drop an allowance lets pass, as a fraction of the base rate: 1 − e^(−allowance) (a halving,
    ln 2, allows a drop of 50 %, not 69 %)."""
    return 1.0 - math.exp(-allowance_ln)


def allowance_words(allowance_ln: float) -> str:
    """The allowance as every output states it (`compare`, the report, `history`, the `--repeat`
    table, the exports): "a drop beyond −50.0 % gates". The log form is only in JSON (`allowance_ln`)."""
    return f"a drop beyond −{allowed_drop(allowance_ln) * 100:.1f} % gates"


def back_to_level(n_rate: float, change: float, history: list[float], allowed: float) -> str | None:
    """Where the allowance stopped at a halving (the runs vary by more) and the new median is within
    a halving of the earlier runs' level (their median), on the side the change went: the base was
    the odd run out and the new run is back where the case usually is (medians 4.06 / 8.39 / 4.06,
    then 4.06 again) — the evidence in words, else None."""
    logs = _logs(history)
    if allowed < MAX_ALLOWANCE or not logs:
        return None
    level = statistics.median(logs)
    off = (math.log(n_rate) if n_rate > 0 else -math.inf) - level  # a rate of 0: infinitely lower
    if (off < 0) == (change < 0) and abs(off) >= MAX_ALLOWANCE:
        return None
    return f"back within a halving of the level of {len(logs)} earlier runs ({math.exp(level):.3g} GB/s)"
