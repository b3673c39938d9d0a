"""What a result records from its case and from its samples, and the peak it is judged against."""

from kvbench.hardware.path import links_under_load
from kvbench.run.runner import result_metadata


def test_a_warning_from_the_case_and_one_from_the_samples_are_both_kept():
    prepared = {"engine": "ce", "warning": "host memory on NUMA node 1, GPU attached to node 0"}
    derived = {"directions_gbps": {"sum": 100.0}, "warning": "d2h ran its last copies with the other direction idle"}
    meta = result_metadata(prepared, derived)
    assert meta["warning"] == f"{prepared['warning']}; {derived['warning']}"
    assert meta["engine"] == "ce" and meta["directions_gbps"] == {"sum": 100.0}


def test_without_warnings_nothing_is_added():
    assert result_metadata({"a": 1}, {"a": 2, "b": 3}) == {"a": 2, "b": 3}


def test_the_links_a_result_read_under_load_are_what_its_peak_is_taken_at():
    link = {"gen": 4, "width": 16, "max_gen": 5, "max_width": 16, "under_load": True}
    assert links_under_load({"gpu": 1}, {"link": link, "gpu": 1})[1].gen == 4
    after = {**link, "under_load": False}  # read after a host-timed copy: the link may have idled down
    assert links_under_load({"gpu": 0}, {"link": after}) == {}
    every = links_under_load({}, {"per_gpu_link": {"0": {"link": link}, "1": {"link": after}}})
    assert set(every) == {0}


def test_a_contended_case_records_what_was_seen_and_warns_with_the_reasons():
    seen = {"contended": ["other processes used 40% of the CPUs"], "faults": ["GPU 0000:17:00.0: XID 79"],
            "host": {"others_cpu_fraction": 0.4}}
    meta = result_metadata({"warning": "far NUMA"}, {}, seen)
    assert meta["contention"] == seen
    assert meta["warning"] == "far NUMA; contended: other processes used 40% of the CPUs; GPU 0000:17:00.0: XID 79"
    clean = result_metadata({}, {}, {"contended": [], "faults": [], "host": {}})
    assert "warning" not in clean and clean["contention"]["contended"] == []
