"""Issue 55, item 4: each GPU stage's own `accept` can PASS on one H100: every acceptance rule that applies
to a one-GPU H100 host (suites/rules/default.toml and h100.toml) finds its case(s) among the cases the
stage's suite plans there, unscaled (the CUDA stand-in dressed as the lent H100 gives the GPU count and
name; nothing is measured). Rules that need several GPUs (the spread over GPUs, NVLink pairs) are left
out: on one GPU they SKIP without leaving the verdict INCOMPLETE (tests/analyze/test_nvlink_rule.py)."""

import itertools

import pytest

from kvbench.analyze.accept.cases import sides
from kvbench.analyze.accept.rules import rules_for_host
from kvbench.benches.describe import canonical_subset
from kvbench.plan.cases import plan
from kvbench.plan.suite import load_suite
from tests.gpu_standin.fixture import installed

H100 = [{"name": "NVIDIA H100 80GB HBM3"}]


def planned(suite: str):
    with installed(gpus=1) as machine:
        from gpu_standin.machine import dress  # the stand-in's, importable while it is installed

        dress(machine, "h100-vm")
        loaded, path, _ = load_suite(suite)
        return plan(loaded.bench, None, {}, source=str(path))


def answered(cases, bench: str, params: dict) -> bool:
    """Some planned case of `bench` has every parameter the rule names (one value of a contest's list)."""
    names = list(params)
    for combo in itertools.product(*([v] if not isinstance(v, list) else v for v in params.values())):
        wanted = canonical_subset(bench, dict(zip(names, combo, strict=True)))
        if any(c.bench == bench and all(c.params.get(k) == v for k, v in wanted.items()) for c in cases):
            return True
    return False


@pytest.mark.parametrize("suite", ["gpu-smoke", "gpu-full"])
def test_every_one_gpu_rule_finds_its_cases_in_the_stage_s_suite(suite):
    cases = planned(suite)
    rules = [r for f in rules_for_host(H100) for r in f.rule if r.spread is None and r.link is None]
    assert {"hbm-read", "h100-hbm-read", "pcie-torch-agrees", "dram-copy-floor", "kv-gpu-best-vs-contiguous"} <= {
        r.id for r in rules}
    missing = [(r.id, bench, params) for r in rules for bench, params in sides(r) if not answered(cases, bench, params)]
    assert not missing, missing
