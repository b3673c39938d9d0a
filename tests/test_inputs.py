"""Every input is checked where it enters, with one line naming it and exit status 2, before any
work is done or anything is written. The `kvbench` commands run in this process (tests/inproc.py): the
line and the status are the point; tests/test_cli.py checks one such refusal through a real process."""

import json

import pytest

from kvbench.errors import BadInput
from tests.inproc import run_in_process as cli


def _one_line_exit_2(proc, message):
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("config,message", [
    ({"num_attention_heads": 64, "num_key_value_heads": 8, "hidden_size": 8192}, "lacks 'num_hidden_layers'"),
    ({"num_hidden_layers": -80, "num_attention_heads": 64, "hidden_size": 8192}, "'num_hidden_layers' must be a positive integer (found -80)"),
    ({"num_hidden_layers": "80", "num_attention_heads": 64, "hidden_size": 8192}, "'num_hidden_layers' must be a positive integer (found '80')"),
    ({"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 7, "hidden_size": 8192}, "not a multiple of num_key_value_heads=7"),
    ({"num_hidden_layers": 80, "num_attention_heads": 64, "hidden_size": 8100}, "hidden_size=8100 is not a multiple"),
    ({"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": True, "hidden_size": 8192}, "must be a positive integer (found True)"),
    ([1, 2], "is a JSON list, not an object"),
])
def test_a_model_config_is_checked_field_by_field(tmp_path, config, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    _one_line_exit_2(cli("plan", "--model", str(path), "--tokens", "16", "--db", f"sqlite:///{tmp_path / 'k'}"),
                     message)


def test_an_output_path_that_cannot_be_written_is_refused_before_the_run(tmp_path):
    db = tmp_path / "k.sqlite"
    (tmp_path / "a-file").write_text("x")  # a folder that does not exist is made; one inside a file cannot be
    _one_line_exit_2(cli("run", "--suite", "tests/fixtures/tiny.toml", "--db", f"sqlite:///{db}", "--json",
                             str(tmp_path / "a-file" / "such" / "dir" / "run.json")), "is not a folder")
    assert not db.exists()  # nothing ran, nothing was written
    _one_line_exit_2(cli("run", "--suite", "tests/fixtures/tiny.toml", "--json", str(tmp_path)), "is a directory")


@pytest.mark.parametrize("args,message", [
    (["run", "--bench", "net.write", "--set", "peer_port=70000"], "bad peer_port=70000: must be at most 65535"),
    (["run", "--samples", "3"], "Invalid value for '--samples'"),
    (["run", "--precision", "1"], "bad --precision 1: give a fraction between 0 and 1 (0.01 is ±1 %); write 1% as 0.01"),
    (["run", "--precision", "nan"], "bad --precision nan"),
    (["run", "--max-time", "0"], "bad --max-time 0: give seconds per case"),
    (["run", "--bogus"], "No such option: --bogus"),
    (["nosuch"], "No such command 'nosuch'"),
    (["run", "--bench", "dram.copy", "--db", "sqlite+nosuchdriver:///x"], "needs a driver"),
    (["run", "--bench", "dram.copy", "--db", "://"], "bad database URL"),
])
def test_bad_options_and_values_are_one_line(tmp_path, args, message):
    _one_line_exit_2(cli(*args, env={"KVBENCH_DB": f"sqlite:///{tmp_path / 'k.sqlite'}"}), message)


def test_a_suite_in_the_wrong_encoding_is_named(tmp_path):
    suite = tmp_path / "latin.toml"
    suite.write_bytes('name = "caf\xe9"\n[[bench]]\nid = "dram.copy"\n'.encode("latin-1"))
    _one_line_exit_2(cli("run", "--suite", str(suite)), "not UTF-8 text")


def test_a_sweep_that_expands_to_an_absurd_number_of_cases_is_refused_with_the_count(tmp_path):
    sizes = ", ".join(f'"{n}KiB"' for n in range(4, 404))  # 400 sizes
    suite = tmp_path / "huge.toml"
    suite.write_text(f'name = "huge"\n[[bench]]\nid = "dram.copy"\nparams = {{ size = [{sizes}], '
                     'threads = [1, 2], fragment = [0, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, '
                     '1048576, 2097152, 4194304, 8388608] }\n')
    proc = cli("run", "--suite", str(suite), "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
    _one_line_exit_2(proc, "expands to 10,400 cases, more than 10,000")
    assert "--max-cases 10400" in proc.stderr and not (tmp_path / "k.sqlite").exists()


def test_launch_and_peer_ports_are_checked():
    import subprocess
    import sys

    for module in ("kvbench.cluster.launch", "kvbench.cluster.peer"):
        proc = subprocess.run([sys.executable, "-m", module, "--port", "0", "--name", "x", "--initiator", "y",
                               "--size", "1"], capture_output=True, text=True, timeout=60)
        _one_line_exit_2(proc, "bad port 0: must be from 1 to 65535")


QUICK = "tests/fixtures/runs/quick-cpu-vm.json"


@pytest.mark.parametrize("make_args", [
    lambda db, url: ["run", "--suite", "tests/fixtures/tiny.toml", "--json", str(db), "--db", url],
    lambda db, url: ["report", "1", "-o", str(db), "--db", url],
    lambda db, url: ["export", "1", "-o", str(db), "--db", url],
    lambda db, url: ["accept", "--run", "1", "--junit", str(db), "--db", url],
    lambda db, url: ["export", QUICK, "-o", str(db)],  # any SQLite database, not only --db's
])
def test_an_output_never_overwrites_the_database(tmp_path, stored_runs, make_args):
    db = tmp_path / "k.sqlite"
    url = stored_runs("tests/fixtures/tiny.toml", 1)
    assert url == f"sqlite:///{db}"
    before = db.read_bytes()
    proc = cli(*make_args(db, url))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "database" in proc.stderr and db.read_bytes() == before


def test_an_output_never_overwrites_its_own_input(tmp_path):
    doc = tmp_path / "run.json"
    doc.write_text((__import__("pathlib").Path(QUICK)).read_text())
    _one_line_exit_2(cli("export", str(doc), "-o", str(doc)), "that is the input")
    _one_line_exit_2(cli("run", "--bench", "dram.copy", "--json", "", "--db", f"sqlite:///{tmp_path / 'k'}"),
                     "give a file name")


def test_an_output_that_fails_while_written_is_one_line():
    _one_line_exit_2(cli("export", QUICK, "-o", "/dev/full"), "cannot write '/dev/full': No space left on device")


def test_an_output_is_written_whole_through_a_temporary_file(tmp_path, monkeypatch):
    from kvbench.cli import common
    from kvbench.errors import BadInput

    target = tmp_path / "x.json"
    target.write_text("old")

    def full_disk(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(common.Path, "write_bytes", full_disk)
    with pytest.raises(BadInput, match="No space left on device"):
        common.write_text("new", str(target))
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


@pytest.mark.parametrize("content,message", [
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    (b'{"run": "caf\xe9"}', "not UTF-8 text"),
])
def test_a_json_input_that_cannot_be_read_is_one_line(tmp_path, content, message):
    path = tmp_path / "doc.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    _one_line_exit_2(cli("export", str(path)), message)
    _one_line_exit_2(cli("plan", "--model", str(path), "--tokens", "16", "--db", f"sqlite:///{tmp_path / 'k'}"),
                     message)


@pytest.mark.parametrize("rule,message", [
    ('bench = "kv.restore"\nmin_fraction_of_peak = 1.5', "less than or equal to 1"),
    ('bench = "kv.restore"\nmin_fraction_of_peak = 0', "greater than 0"),
    ('bench = "kv.restore"\nmin = { value = -5, unit = "GB/s" }', "greater than 0"),
    ('bench = "kv.restore"\nratio = { of = { strategy = "host" }, to = { strategy = "contiguous" }, min = 1.1, max = 0.9 }',
     "min 1.1 is above max 0.9"),
    ('bench = "dram.cpy"\nmin_fraction_of_peak = 0.5', "did you mean 'dram.copy'"),
    ('bench = "dram.copy"\nparams = { sise = "1MiB" }\nmin_fraction_of_peak = 0.5', "did you mean 'size'"),
    ('bench = "dram.copy"\nmin = { value = inf, unit = "GB/s" }', "finite number"),
    ('bench = "dram.copy"\nmin_fraction_of_peak = "0.3"', "key 'rule.0.min_fraction_of_peak': Input should be a valid number"),
    ('bench = "dram.copy"\nmin_fraction_of_peak = 0.3\n[[rule]]\nid = "r"\nbench = "dram.copy"\nmin_fraction_of_peak = 0.5',
     "rule id 'r' is given twice"),
])
def test_a_wrong_threshold_or_a_rule_that_could_never_apply_is_refused(tmp_path, rule, message):
    path = tmp_path / "rules.toml"
    path.write_text(f'name = "t"\n[[rule]]\nid = "r"\n{rule}\n')
    _one_line_exit_2(cli("accept", "--rules", str(path), "--run", "1", "--db", f"sqlite:///{tmp_path / 'k'}"),
                     message)


def test_a_rules_folder_is_refused(tmp_path):
    _one_line_exit_2(cli("accept", "--rules", str(tmp_path), "--run", "1"), "is a folder")


def test_an_environment_value_with_a_newline_stays_one_line_and_creates_nothing(tmp_path):
    db = tmp_path / "new" / "k.sqlite"
    proc = cli("run", "--bench", "dram.copy", "--db", f"sqlite:///{db}", env={"KVBENCH_HOST_ID": "ab\ncd"})
    _one_line_exit_2(proc, "bad KVBENCH_HOST_ID 'ab\\ncd'")
    assert not db.parent.exists()


def test_commands_that_change_stored_runs_create_no_database(tmp_path):
    db = tmp_path / "new" / "k.sqlite"
    for args in (["tag", "1", "baseline"], ["host", "merge", "a", "b"], ["accept", "--run", "1"]):
        _one_line_exit_2(cli(*args, "--db", f"sqlite:///{db}"), "no kvbench database")
    assert not db.parent.exists()


@pytest.mark.parametrize("args,env,message", [
    (["--block-size", "1MeB"], {"RANK": "0"}, "bad block_size '1MeB'"),
    ([], {"RANK": "abc"}, "bad RANK 'abc'"),
    (["--memory", "nosuch"], {"RANK": "0"}, "unknown memory kind 'nosuch'"),
    (["--batch", "0"], {"RANK": "0"}, "must be at least 1"),
    (["--timeout", "nan"], {"RANK": "0"}, "must be a finite number above 0"),
    (["--peer-addr", "127.0.0.1", "--", "--set", "bogus"], {"RANK": "1"}, "bad --set 'bogus'"),
    (["--", "--bench", "dram.copy"], {"RANK": "1"}, "none of the selected benchmarks runs against a peer"),
    # a database this rank cannot open: refused before the roster wait (it joined, waited for the others, then
    # failed, and the others waited --timeout for it)
    (["--peer-addr", "127.0.0.1", "--timeout", "900", "--", "--db", "sqlite:////proc/kvbench-none.sqlite"],
     {"RANK": "1", "WORLD_SIZE": "2"}, "cannot reach database 'sqlite:////proc/kvbench-none.sqlite'"),
    # kvbench run's limits on --samples (5 to 10,000): fewer was a ValueError traceback, 0 silently the suite's
    (["--peer-addr", "127.0.0.1", "--", "--samples", "1"], {"RANK": "1", "WORLD_SIZE": "2"},
     "argument --samples: bad samples 1: must be from 5 to 10000"),
    (["--peer-addr", "127.0.0.1", "--", "--samples", "0"], {"RANK": "1", "WORLD_SIZE": "2"},
     "argument --samples: bad samples 0: must be from 5 to 10000"),
    (["--peer-addr", "127.0.0.1", "--", "--samples", "20000"], {"RANK": "1", "WORLD_SIZE": "2"},
     "argument --samples: bad samples 20000: must be from 5 to 10000"),
    # a rank beyond the world was taken as a second measuring side (both then failed: "peer did not answer")
    (["--peer-addr", "127.0.0.1"], {"RANK": "2", "WORLD_SIZE": "2"}, "bad RANK 2: WORLD_SIZE=2 gives ranks 0 to 1"),
    (["--peer-addr", "127.0.0.1"], {"RANK": "2"}, "RANK is set but WORLD_SIZE is not"),
    (["--peer-addr", "127.0.0.1"], {"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, "bad SLURM_NTASKS 1"),
    # a world without bound grew rank 0 to 4.8 GB before it said anything: refused at once, on every rank
    (["--peer-addr", "127.0.0.1"], {"RANK": "0", "WORLD_SIZE": "99999999999"},
     "bad WORLD_SIZE 99999999999: python -m kvbench.cluster.launch takes at most 4096 ranks"),
    (["--peer-addr", "127.0.0.1"], {"RANK": "3", "WORLD_SIZE": "4097"},
     "bad WORLD_SIZE 4097: python -m kvbench.cluster.launch takes at most 4096 ranks"),
    (["--peer-addr", "127.0.0.1"], {"SLURM_PROCID": "0", "SLURM_NTASKS": "100000"},
     "bad SLURM_NTASKS 100000: python -m kvbench.cluster.launch takes at most 4096 ranks"),
    (["--pattern", "incast:4"], {"RANK": "1", "WORLD_SIZE": "4"}, "bad --pattern 'incast:4': with 4 ranks K goes"),
    (["--pattern", "star"], {"RANK": "1", "WORLD_SIZE": "4"}, "bad --pattern 'star': choose one of pairs, ring"),
    ([], {"RANK": "1", "WORLD_SIZE": "4"}, "give --peer-addr (rank 0's host) or set MASTER_ADDR"),
    ([], {"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_JOB_NODELIST": "[,"}, "bad SLURM_JOB_NODELIST"),
    # a host name is resolved (MASTER_ADDR and scontrol give names); one that does not resolve is named
    (["--peer-addr", "nosuch.invalid"], {"RANK": "1", "WORLD_SIZE": "2"},
     "bad --peer-addr 'nosuch.invalid': expected an IP address or"),
    ([], {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "nosuch.invalid"}, "bad MASTER_ADDR 'nosuch.invalid'"),
    ([], {"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "nosuch[1-2].invalid"},
     "bad SLURM_JOB_NODELIST 'nosuch1.invalid'"),
])
def test_launch_inputs_are_one_line(args, env, message):
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "kvbench.cluster.launch", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    _one_line_exit_2(proc, message)


def test_an_address_parameter_takes_a_host_name_and_resolves_it():
    from kvbench.benches.params import resolve_address

    assert resolve_address("localhost", "x") in ("127.0.0.1", "::1")
    assert resolve_address(" 10.0.0.1 ", "x") == "10.0.0.1"
    for bad in ("999.1.1.1", "a b", ""):
        with pytest.raises(BadInput, match="expected an IP address"):
            resolve_address(bad, "x")


@pytest.mark.parametrize("args,message", [
    (["tag", "1", ""], "bad tag name ''"),
    (["tag", "1", "foo=bar"], "bad tag name 'foo=bar'"),
    (["history", "dram.copy", "--params", "foo=1"], "unknown parameter of dram.copy 'foo'"),
    (["fleet", "--bench", "nosuch"], "unknown benchmark 'nosuch'"),
    (["plan", "--model", "Llama-3.1-8B", "--tokens", "16", "--gpu", "B999"], "unknown GPU"),
    (["plan", "--model", "Llama-3.1-8B", "--tokens", "16", "--gpu", "H200", "--tflops", "700"], "not both"),
    # hostile trial H26: 10^20 tokens priced a recompute at 10^34 ms
    (["plan", "--model", "Llama-3.1-8B", "--tokens", "99999999999999999999", "--gpu", "H200"],
     "bad --tokens 99999999999999999999: give from 1 to 1,000,000,000 tokens"),
    (["compare", "1", "2", "--threshold", "5"], "write 5% or 0.05"),
    (["compare", "1", "2", "--threshold", "nan"], "bad --threshold 'nan': not a number"),
    (["compare", "1", "2", "--threshold", "-0.1"], "bad --threshold '-0.1': must be between 0% and 100%"),
    (["tag", "1", "x" * 65], "at most 64 characters"),
    (["run", "--bench", "dram.copy", "--set", "size=64MiB", "--set", "fragment=128MiB"], "larger than size=64MiB"),
    (["run", "--bench", "net.write", "--set", "peer=remote", "--set", "peer_addr=999.1.1.1"], "expected an IP address"),
    (["run", "--bench", "dram.copy", "--json", "/proc/kvbench.json"], "bad --json '/proc/kvbench.json': not writable"),
])
def test_more_inputs_refused_at_the_edge_before_anything_is_made(tmp_path, args, message):
    db = tmp_path / "new" / "k.sqlite"
    _one_line_exit_2(cli(*args, "--db", f"sqlite:///{db}"), message)
    assert not db.parent.exists()


def test_a_parameter_given_twice_with_two_values_is_refused(tmp_path):
    """Hostile trial H13: --set size=4MiB --set size=8MiB ran 8 MiB only, silently."""
    proc = cli("run", "--bench", "dram.copy", "--set", "size=4MiB", "--set", "size=8MiB", "--db",
                   f"sqlite:///{tmp_path / 'k.sqlite'}")
    _one_line_exit_2(proc, "--set size given twice (4MiB and 8MiB)")
    assert not (tmp_path / "k.sqlite").exists()  # refused before anything was made

