from pathlib import Path

import pytest

from kvbench.errors import BadInput
from kvbench.plan.cases import plan
from kvbench.plan.suite import BenchSweep, load_suite, suite_names


def test_shipped_suites_load_and_plan():
    assert "quick" in suite_names()
    for name in suite_names():
        suite, path, digest = load_suite(name)
        assert len(digest) == 64 and path.suffix == ".toml"
        assert plan(suite.bench)


def test_lists_expand_as_a_cartesian_product_minus_excludes():
    sweep = BenchSweep(id="dram.copy", params={"size": ["4MiB", "64MiB"], "threads": [1, 2]},
                       exclude=[{"size": "4MiB", "threads": 2}])
    cases = plan([sweep])
    assert [(c.params["size"], c.params["threads"]) for c in cases] == [(4 << 20, 1), (64 << 20, 1), (64 << 20, 2)]
    assert all(c.params["src"] == "pageable" for c in cases)  # defaults filled in
    assert len({c.case_hash for c in cases}) == 3


def test_overrides_replace_the_sweep_and_duplicates_collapse():
    sweep = BenchSweep(id="dram.copy", params={"size": ["4MiB", "64MiB"]})
    cases = plan([sweep], overrides={"size": "1MiB"})
    assert [c.params["size"] for c in cases] == [1 << 20]


def test_a_selected_bench_not_in_the_suite_runs_with_defaults():
    cases = plan([], only=["dram.copy"])
    assert cases[0].params["size"] == 256 << 20


@pytest.mark.parametrize("kwargs,message", [
    ({"only": ["dram.cpy"]}, "unknown benchmark 'dram.cpy'; did you mean 'dram.copy'"),
    ({"overrides": {"sise": "1MiB"}}, "no selected benchmark takes a parameter 'sise'; did you mean 'size'"),
    ({"overrides": {"size": "12XB"}}, "bad size '12XB'"),
])
def test_bad_selection_is_named(kwargs, message):
    with pytest.raises(BadInput, match=message):
        plan([BenchSweep(id="dram.copy")], **kwargs)


def test_unknown_parameter_suggests_the_closest():
    with pytest.raises(BadInput, match="did you mean 'threads'"):
        plan([BenchSweep(id="dram.copy", params={"thread": 2})])


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return str(path)


def _refused(tmp_path: Path, text: str, match: str) -> None:
    """A suite file of `text` is refused, with a message matching `match`."""
    with pytest.raises(BadInput, match=match):
        load_suite(_write(tmp_path, text))


def test_toml_syntax_error_names_the_file_and_line(tmp_path):
    _refused(tmp_path, 'name = "x"\n[[bench]\nid = "dram.copy"\n', r"suite .*suite.toml: TOML syntax error: .*line 2")


def test_schema_error_names_the_key_and_line(tmp_path):
    _refused(tmp_path, 'name = "x"\n\n[[bench]]\nid = "dram.copy"\n\n[[bench]]\nid = "dram.copy"\nsamples = 3\n',
             r"line 8: key 'bench.1.samples'")
    _refused(tmp_path, 'name = "x"\n[settings]\nsamples = 2\n[[bench]]\nid = "dram.copy"\n',
             r"line 3: key 'settings.samples'.*greater than or equal to 5")


@pytest.mark.parametrize("sweeps,message", [
    ('[[bench]]\nid = "dram.copy"\nparams = { size = "12QB" }', r"\[\[bench\]\] 1 \(dram.copy\): bad size '12QB'"),
    ('[[bench]]\nid = "dram.copy"\n[[bench]]\nid = "dram.cpy"', r"\[\[bench\]\] 2 \(dram.cpy\): unknown benchmark"),
    ('[[bench]]\nid = "dram.copy"\nparams = { sise = "1MiB" }', r"\[\[bench\]\] 1 \(dram.copy\): .*did you mean 'size'"),
])
def test_a_fault_in_a_sweep_names_the_suite_file_and_the_sweep(tmp_path, sweeps, message):
    path = _write(tmp_path, f'name = "x"\n{sweeps}\n')
    suite, where, _ = load_suite(path)
    with pytest.raises(BadInput, match=rf"suite .*suite.toml, {message}"):
        plan(suite.bench, source=str(where))


def test_absurd_settings_a_folder_and_a_byte_order_mark(tmp_path):
    _refused(tmp_path, 'name = "x"\n[settings]\nsamples = 1000000000\n[[bench]]\nid = "dram.copy"\n',
             r"key 'settings.samples'.*less than or equal to 10000")
    _refused(tmp_path, 'name = "x"\n[settings]\nwarmup_s = 1e9\n[[bench]]\nid = "dram.copy"\n', r"key 'settings.warmup_s'")
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(BadInput, match="is a folder; give a .toml file"):
        load_suite(str(tmp_path / "dir.toml"))
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b'\xef\xbb\xbfname = "x"\n[[bench]]\nid = "dram.copy"\n')
    assert load_suite(str(bom))[0].name == "x"


def test_unknown_suite_lists_the_shipped_ones():
    with pytest.raises(BadInput, match="unknown suite 'quik'; did you mean 'quick'"):
        load_suite("quik")


def test_numa_star_expands_to_every_node():
    from kvbench.memory.numa import online_nodes

    cases = plan([BenchSweep(id="dram.copy", params={"src": "numa:*", "dst": "numa:*", "size": "4MiB"})])
    assert len(cases) == len(online_nodes()) ** 2
    assert {c.params["src"] for c in cases} == {f"numa:{n}" for n in online_nodes()}


def test_gpu_star_expands_to_every_cuda_device_or_gpu_0_to_say_why_not():
    from kvbench.backends.cuda import device_count

    cases = plan([BenchSweep(id="pcie.h2d", params={"memory": ["pinned", "pageable"], "gpu": "*"})])
    gpus = list(range(device_count())) or [0]
    assert sorted(c.params["gpu"] for c in cases) == sorted(gpus * 2)
    assert {c.params["memory"] for c in cases} == {"pinned", "pageable"}
