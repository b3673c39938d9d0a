"""What a result records from its case and from its samples."""

from kvbench.runner import result_metadata


def test_a_warning_from_the_case_and_one_from_the_samples_are_both_kept():
    prepared = {"engine": "ce", "warning": "host memory on NUMA node 1, GPU attached to node 0"}
    derived = {"directions_gbps": {"sum": 100.0}, "warning": "d2h ran its last copies with the other direction idle"}
    meta = result_metadata(prepared, derived, "gpu_link:0")
    assert meta["warning"] == f"{prepared['warning']}; {derived['warning']}"
    assert meta["engine"] == "ce" and meta["directions_gbps"] == {"sum": 100.0} and meta["bottleneck"] == "gpu_link:0"


def test_without_warnings_or_bottleneck_nothing_is_added():
    assert result_metadata({"a": 1}, {"a": 2, "b": 3}, None) == {"a": 2, "b": 3}
