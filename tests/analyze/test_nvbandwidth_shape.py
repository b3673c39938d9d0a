"""kvbench's PCIe and GPU-to-GPU rows laid out as nvbandwidth's testcases (synthetic rates: they test the
layout, they are not measurements)."""

from __future__ import annotations

import json

from kvbench.analyze.links.nvbandwidth_shape import nvbandwidth_cases, nvbandwidth_json
from kvbench.report.nvbandwidth_text import nvbandwidth_text


def ok(bench: str, gbps: float, metadata: dict | None = None, **params) -> dict:
    return {"bench": bench, "status": "ok", "params": params, "gbps": {"median": gbps}, "metadata": metadata or {},
            "case": f"{bench}:{sorted(params.items())}"}


def rows() -> list[dict]:
    return [ok("pcie.h2d", 54.1, memory="pinned", engine="ce", gpu=0, size=1 << 28),
            ok("pcie.h2d", 53.9, memory="pinned", engine="ce", gpu=1, size=1 << 28),
            ok("pcie.h2d", 20.0, memory="pinned", engine="ce", gpu=1, size=1 << 20),  # smaller: not the cell
            ok("pcie.h2d", 9.0, memory="pageable", engine="ce", gpu=0, size=1 << 28),  # nvbandwidth has no pageable
            ok("pcie.d2h", 55.0, memory="pinned", engine="ce", gpu=0, size=1 << 28),
            ok("pcie.bidir", 101.0, {"directions_gbps": {"h2d": 50.5, "d2h": 49.5, "sum": 100.0}}, memory="pinned",
               engine="ce", gpu=0, size=1 << 28),
            ok("gpu.p2p", 300.0, pair="0-1", engine="ce", direction="write", bidir="no", size=1 << 28),
            ok("gpu.p2p", 290.0, pair="0-1", engine="ce", direction="read", bidir="no", size=1 << 28),
            ok("gpu.p2p", 590.0, {"directions_gbps": {"0->1": 296.0, "1->0": 298.0, "sum": 590.0}}, pair="0-1",
               engine="sm", direction="write", bidir="yes", size=1 << 28)]


def test_each_result_lands_in_its_nvbandwidth_testcase_and_cell():
    cases = {c.name: c for c in nvbandwidth_cases(rows(), gpu_count=2)}
    assert list(cases) == ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                           "host_to_device_bidirectional_memcpy_ce", "device_to_host_bidirectional_memcpy_ce",
                           "device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce",
                           "device_to_device_bidirectional_memcpy_write_sm"]
    assert cases["host_to_device_memcpy_ce"].matrix() == [[54.1, 53.9]]  # the 256 MiB cells; pageable left out
    assert cases["device_to_host_memcpy_ce"].matrix() == [[55.0, None]]
    assert cases["host_to_device_bidirectional_memcpy_ce"].matrix() == [[50.5, None]]  # one direction, the other busy
    assert cases["device_to_device_memcpy_write_ce"].matrix() == [[None, 300.0], [None, None]]  # row: the source
    assert cases["device_to_device_memcpy_read_ce"].matrix() == [[None, None], [290.0, None]]  # row: the reader
    total = cases["device_to_device_bidirectional_memcpy_write_sm"]
    assert total.matrix()[0][1] == 296.0 + 298.0  # nvbandwidth's Total: each direction's own rate, summed
    assert total.directions[(0, 1)] == (296.0, 298.0)


def test_the_json_has_nvbandwidth_s_field_names_and_strings_in_its_matrix():
    doc = json.loads(json.dumps(nvbandwidth_json(nvbandwidth_cases(rows(), 2), {"id": 7, "kvbench_version": "0.1.0"})))
    tests = doc["nvbandwidth"]["testcases"]
    assert {"name", "status", "bandwidth_description", "bandwidth_matrix", "sum"} <= set(tests[0])
    first = tests[0]
    assert first["name"] == "host_to_device_memcpy_ce" and first["status"] == "Passed"
    assert first["bandwidth_description"] == "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"
    assert first["bandwidth_matrix"] == [["54.1", "53.9"]] and first["sum"] == 54.1 + 53.9
    d2h = next(t for t in tests if t["name"] == "device_to_host_memcpy_ce")
    assert d2h["bandwidth_matrix"] == [["55", "N/A"]]


def test_the_text_is_laid_out_as_nvbandwidth_prints_it():
    text = nvbandwidth_text(nvbandwidth_cases(rows(), 2), 7)
    assert "Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)" in text
    assert "SUM host_to_device_memcpy_ce 108.00" in text
    assert " 0     55.00       N/A" in text
    assert "296.00 + 298.00 GB/s" in text
    assert "has no result nvbandwidth has a testcase for" in nvbandwidth_text([], 3)


def test_the_json_header_has_every_key_nvbandwidth_writes_filled_from_the_run_or_null_with_why():
    """Issue 57 item 16: a dashboard keyed on `Driver Version` never meets a KeyError."""
    host = {"facts": {"gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:19:00.0"}]}}
    context = {"id": "c", "facts": {"nvidia_driver": "580.159.04", "cuda_driver": "13.0"}}
    run = {"id": 7, "kvbench_version": "0.1.0", "git_sha": "abc123"}
    head = nvbandwidth_json(nvbandwidth_cases(rows(), 1), run, host, context)["nvbandwidth"]
    assert head["Driver Version"] == "580.159.04" and head["version"] == "0.1.0" and head["git_version"] == "abc123"
    assert head["GPU Device list"] == ["0: NVIDIA H100 80GB HBM3 (0000:19:00.0)"]
    assert head["CUDA Runtime Version"] is None and "13.0" in head["kvbench_null_reasons"]["CUDA Runtime Version"]
    bare = nvbandwidth_json([], {"id": 8})["nvbandwidth"]
    for key in ("version", "git_version", "CUDA Runtime Version", "Driver Version", "GPU Device list"):
        assert key in bare
        assert key in bare["kvbench_null_reasons"], key
