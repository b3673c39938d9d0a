"""`load=`: where a kernel may run beside the copies, and that without a GPU such a case is skipped
with the reason (the measurement itself is in tests/gpu)."""

import pytest

from kvbench.backends.cuda import cuda_unavailable_reason
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.measure import Settings
from kvbench.plan.cases import Case
from kvbench.run.runner import run_case


def params(bench, **given):
    return get_bench(bench).canonical_params(given)


@pytest.mark.parametrize("bench,given", [
    ("pcie.h2d", {"load": "hbm"}), ("pcie.d2h", {"load": "gemm", "memory": "pageable"}),
    ("pcie.bidir", {"load": "hbm"}),
    ("kv.restore", {"load": "gemm", "src": "pinned", "dst": "device", "strategy": "ce-batch"}),
])
def test_a_load_beside_gpu_copies_is_accepted(bench, given):
    get_bench(bench).validate(params(bench, **given))  # the GPU checks in it pass where CUDA is absent
    assert params(bench, **given)["load"] == given["load"]


@pytest.mark.parametrize("bench,given,message", [
    ("pcie.h2d", {"load": "hbm", "backend": "torch"}, "backend=cupy, gpus=one"),
    ("pcie.h2d", {"load": "gemm", "gpus": "all"}, "backend=cupy, gpus=one"),
    ("kv.restore", {"load": "hbm"}, "dst=device"),
    ("kv.offload", {"load": "hbm", "src": "pinned", "dst": "device", "strategy": "ce-batch"}, "kv.restore"),
])
def test_a_load_where_no_kernel_can_run_beside_the_copies_is_bad_input(bench, given, message):
    with pytest.raises(BadInput, match=message):
        get_bench(bench).validate(params(bench, **given))


def test_an_unknown_load_is_named():
    with pytest.raises(BadInput, match="choose one of none, hbm, gemm"):
        params("pcie.h2d", load="fft")


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="a GPU is here: tests/gpu measures the load")
def test_without_a_gpu_a_case_under_load_is_skipped_with_the_reason(facts):
    case = Case("kv.restore", params("kv.restore", load="hbm", src="pinned", dst="device", strategy="ce-batch"))
    result = run_case(case, facts, Settings(samples=5))
    assert result.status == "skipped" and "CUDA" in result.reason


def test_load_leaves_the_identity_of_earlier_cases_alone():
    from kvbench.benches import get_bench
    from kvbench.benches.params import case_hash

    plain = Case("pcie.h2d", params("pcie.h2d"))
    specs = get_bench("pcie.h2d").params
    assert specs["load"].added  # so at its default it leaves the case as before; and so does every later one (pages)
    assert plain.case_hash == case_hash("pcie.h2d", {k: v for k, v in plain.params.items() if not specs[k].added})
