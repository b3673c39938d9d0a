"""Inputs that parse but say something impossible are refused in one line: non-finite numbers in an
export, a model routing more experts than it has, ratio rules that judge nothing or a case against
itself; and what an imported export says shows in Markdown as text, never as markup."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kvbench.analyze.accept.rules import load_rules
from kvbench.analyze.runs import load_document
from kvbench.errors import BadInput
from kvbench.kv.geometry import read_hf_config
from tests.conftest import FIXTURES
from tests.inproc import run_in_process as cli

QUICK = FIXTURES / "runs" / "quick-cpu-vm.json"


@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_an_export_with_a_non_finite_number_is_refused(tmp_path, word):
    text = QUICK.read_text()
    doc = json.loads(text)
    median = doc["results"][0]["gbps"]["median"]
    path = tmp_path / "nan.json"
    path.write_text(text.replace(f'"median": {json.dumps(median)}', f'"median": {word}', 1))
    assert word in path.read_text()
    with pytest.raises(BadInput, match="non-finite"):
        load_document(str(path), None, None)
    proc = cli("export", str(path))
    assert proc.returncode == 2 and proc.stdout == "" and "non-finite" in proc.stderr, proc.stderr


def _config(tmp_path: Path, **fields) -> Path:
    config = {"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512,
              "intermediate_size": 1024, "vocab_size": 1000, "model_type": "mixtral", "num_local_experts": 8,
              "num_experts_per_tok": 2, **fields}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_a_config_routing_more_experts_than_it_has_is_refused(tmp_path):
    read_hf_config(_config(tmp_path))
    with pytest.raises(BadInput, match="num_experts_per_tok=16 is more than the 8 experts"):
        read_hf_config(_config(tmp_path, num_experts_per_tok=16))


def _rules(tmp_path: Path, ratio: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(f'name = "t"\n[[rule]]\nid = "r"\nbench = "kv.restore"\nratio = {{ {ratio}, min = 0.5 }}\n')
    return path


@pytest.mark.parametrize("ratio", [
    'of = { strategy = "host" }, to = { strategy = "host" }',
    'of = { block_tokens = 16 }, to = { block_tokens = "16" }',
    'of = {}, to = {}',
    'of = { strategy = ["host", "contiguous"] }, to = { strategy = "contiguous" }',
    'of = { strategy = "host" }, to = { block_tokens = 16 }',
])
def test_a_ratio_that_can_compare_a_case_with_itself_is_refused(tmp_path, ratio):
    with pytest.raises(BadInput, match="can name the same case"):
        load_rules(_rules(tmp_path, ratio))


def test_a_ratio_whose_of_lists_nothing_is_refused(tmp_path):
    with pytest.raises(BadInput, match=r"strategy = \[\], which names no case"):
        load_rules(_rules(tmp_path, 'of = { strategy = [] }, to = { strategy = "contiguous" }'))
    load_rules(_rules(tmp_path, 'of = { strategy = ["host"] }, to = { strategy = "contiguous" }'))
    load_rules(_rules(tmp_path, 'of = { bench = "kv.offload" }, to = {}'))


def test_text_from_an_imported_export_is_inert_in_markdown(tmp_path):
    from kvbench.report import content, render

    doc = json.loads(QUICK.read_text())
    hostile = copy.deepcopy(doc)
    skipped = hostile["results"][0]
    skipped.update(status="skipped", gbps=None, seconds=None, efficiency=None)
    skipped["reason"] = "a | b <img src=x onerror=alert(1)> [link](http://127.0.0.1/) **bold**\nsecond line"
    hostile["run"]["suite"] = "q|uick_<b>"
    md = render.markdown(content.build([hostile]))
    import re

    unescaped = [m for m in ("<img", "[link](", "**bold**", "<b>") if re.search(r"(?<!\\)" + re.escape(m), md)]
    assert not unescaped
    row = next(line for line in md.splitlines() if "onerror" in line)
    assert "a \\| b \\<img" in row and "second line" in row
    header = next(line for line in md.splitlines() if line.startswith("| run | benchmark"))
    assert len(row.replace("\\|", "").split("|")) == len(header.split("|"))


def test_plot_says_why_a_run_gives_no_figure(tmp_path):
    figure = str(tmp_path / "f.png")
    proc = cli("plot", str(QUICK), "--bench", "hbm.read", "-o", figure)
    assert proc.returncode == 2 and "has no hbm.read result (it ran dram.copy" in proc.stderr, proc.stderr
    doc = json.loads(QUICK.read_text())
    for result in doc["results"]:
        result.update(status="skipped", reason="no room in /dev/shm", gbps=None, seconds=None, efficiency=None)
    skipped = tmp_path / "skipped.json"
    skipped.write_text(json.dumps(doc))
    proc = cli("plot", str(skipped), "--bench", "dram.copy", "-o", figure)
    assert proc.returncode == 2 and "measured no dram.copy case" in proc.stderr and "no room in /dev/shm" in proc.stderr
    assert "sweep" not in proc.stderr
    proc = cli("plot", str(QUICK), "--bench", "dram.cpy", "-o", figure)
    assert proc.returncode == 2 and "did you mean 'dram.copy'" in proc.stderr
