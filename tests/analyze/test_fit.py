import numpy as np
import pytest

from kvbench.analyze.decide.fit import fit_alpha_beta, fit_results


def test_fit_recovers_known_alpha_and_beta():
    fragments = np.array([40960, 2560, 1280, 640, 160], dtype=float)  # blocks of 1 … 256 tokens
    size = np.full(5, 1.34e9)
    size[-1] = 0.67e9
    alpha, beta = 1.5e-6, 25e9
    rng = np.random.default_rng(0)
    seconds = (fragments * alpha + size / beta) * rng.normal(1, 0.005, 5)
    fit = fit_alpha_beta(fragments, size, seconds)
    assert fit.alpha_us == pytest.approx(1.5, rel=0.05)
    assert fit.beta_gbps == pytest.approx(25, rel=0.05)
    assert fit.r2 > 0.99 and fit.points == 5


def test_fragments_growing_with_bytes_cannot_be_separated():
    assert fit_alpha_beta([10, 20, 40], [100, 200, 400], [1e-5, 2e-5, 4e-5]) is None


def test_pure_per_fragment_cost_has_no_bandwidth_term():
    fit = fit_alpha_beta([10, 20, 40], [1000, 1000, 1000], [1e-5, 2e-5, 4e-5])
    assert fit.alpha_us == pytest.approx(1.0) and fit.beta_gbps is None


def test_too_few_points_give_no_fit():
    assert fit_alpha_beta([1, 2], [10, 20], [1.0, 2.0]) is None


def test_results_are_fitted_per_series():
    def row(block_tokens, strategy, fragments, seconds):
        return {"bench": "kv.restore", "status": "ok", "bytes_per_op": 1e9, "median_s": seconds,
                "params": {"block_tokens": block_tokens, "strategy": strategy, "model": "m"},
                "extra": {"fragments": fragments}}

    rows = [row(bt, "host", 1e5 / bt, 1e5 / bt * 1e-6 + 0.04) for bt in (1, 16, 64)]
    rows += [row(16, "contiguous", 1, 0.04), {"bench": "dram.copy", "status": "ok", "params": {}, "extra": {}}]
    fits = dict((p["strategy"], f) for p, f in fit_results(rows))
    assert fits["contiguous"] is None  # one point
    assert fits["host"].alpha_us == pytest.approx(1.0, rel=1e-3)
    assert fits["host"].beta_gbps == pytest.approx(25.0, rel=1e-3)
