"""What a newcomer typed (issue 43.10): counts of tokens as the docs write them (`8k`), help that names
what an option takes, a crosscheck's trials in words, and a suggestion that works when followed."""

import json

import pytest

from kvbench.errors import BadInput
from kvbench.units import parse_count
from tests.conftest import FIXTURES
from tests.inproc import run_in_process as cli

QUICK = str(FIXTURES / "runs" / "quick-cpu-vm.json")


@pytest.mark.parametrize("text,count", [("8192", 8192), ("8k", 8192), ("8K", 8192), ("8Ki", 8192), (" 16k ", 16384),
                                        (64, 64)])
def test_a_count_takes_k_as_1024_as_context_lengths_count(text, count):  # issue 57 item 13 (was k = 1000)
    assert parse_count(text, "--tokens") == count


@pytest.mark.parametrize("text", ["8q", "8.5k", "8kib", "k", "", "8 M"])
def test_a_count_that_is_none_names_the_accepted_forms(text):
    with pytest.raises(BadInput, match=r"bad --tokens '.*': give a whole number such as 8192, or 8k = 8Ki = 8192 \(k = 1024"):
        parse_count(text, "--tokens")


def test_tokens_take_8k_on_plan_report_and_a_benchmark_s_parameter(tmp_path):
    from kvbench.benches import get_bench

    assert get_bench("kv.restore").canonical_params({"tokens": "8k"})["tokens"] == 8192
    bad = cli("run", "--bench", "kv.restore", "--set", "tokens=8x", "--db", f"sqlite:///{tmp_path / 'k.sqlite'}")
    assert bad.returncode == 2 and "bad tokens='8x': give a whole number such as 8192, or 8k" in bad.stderr
    plan = cli("plan", "--model", "Llama-3.1-8B", "--tokens", "8k", "--db", f"sqlite:///{tmp_path / 'none'}")
    assert plan.returncode == 2 and "--tokens" not in plan.stderr, plan.stderr  # it got past the count
    for text, said in (("8q", "give a whole number such as 8192, or 8k"), ("0", "give from 1 to"),
                       ("2000000k", "give from 1 to")):
        proc = cli("plan", "--model", "Llama-3.1-8B", "--tokens", text)
        assert proc.returncode == 2 and f"bad --tokens {text}" in proc.stderr.replace("'", "") and said in proc.stderr
    report = tmp_path / "r.md"
    assert cli("report", QUICK, "--tokens", "8k", "-o", str(report)).returncode == 0
    assert "8192 tokens" in report.read_text()


def test_accept_help_says_a_profile_is_a_file_or_a_name():
    assert "FILE|NAME" in cli("accept", "--help").stdout


def test_crosscheck_dram_writes_its_trials_in_words_not_a_python_dict():
    from kvbench.crosscheck.dram import _trials

    text = _trials({"memcpy": 12.13, "numpy": 10.3})
    assert text == "trials: memcpy 12.1, numpy 10.3 GB/s" and "{" not in text


def test_plan_suggests_the_model_as_given_so_run_takes_it(tmp_path):
    """`plan --model cfg/ok.json` suggested `--set model=ok`, which `run` refuses: the path is carried."""
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    assert cli("run", "--bench", "kv.restore", "--set", "model=Llama-3.1-8B", "--set", "tokens=64", "--set",
               "strategy=contiguous", "--db", db).returncode == 0
    config = tmp_path / "cfg" / "ok.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                  "hidden_size": 256}))
    proc = cli("plan", "--model", str(config), "--tokens", "64", "--db", db)
    assert proc.returncode == 2 and f"--set model={config}'" in proc.stderr, proc.stderr
    from kvbench.benches import get_bench

    assert get_bench("kv.restore").canonical_params({"model": str(config)})["model"] == str(config)
