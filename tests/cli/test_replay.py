"""`kvbench replay` as a user runs it: the JSON keys docs/json-outputs.md names, tiers in the order
given, and a bad trace or tier refused in one line with exit 2, nothing written."""

import gzip
import json

import pytest

from kvbench.kv.trace import shipped_dir
from tests.conftest import REPO, run_cli


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    """The shipped trace's first 300 requests."""
    lines = gzip.decompress((shipped_dir() / "mooncake-conversation.jsonl.gz").read_bytes()).decode().splitlines()
    path = tmp_path_factory.mktemp("trace") / "small.jsonl"
    path.write_text("\n".join(lines[:300]) + "\n")
    return str(path)


def replay(tmp_path, *args):
    return run_cli("replay", "--model", "Llama-3.1-8B", "--gpu", "H100", "--db", f"sqlite:///{tmp_path}/none.sqlite",
                   *args)


def test_the_json_document_holds_every_configuration_and_its_tiers(tmp_path, small_trace):
    done = replay(tmp_path, "--trace", small_trace, "--tier", "hbm=20GB", "--tier", "dram=1TB:vllm",
                  "--config", "hbm=20GB", "--sweep", "dram=100GB,400GB,1TB", "--json", "-")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [c["label"] for c in doc["configs"]] == ["hbm=20GB + dram=1TB", "hbm=20GB"]
    first = doc["configs"][0]
    for key in ("hit_ratio", "token_hit_ratio", "request_hit_ratio"):
        assert 0 <= first[key] <= 1
    assert set(first["ttft_s"]) >= {"p50", "p99"}
    hbm, dram = first["tiers"]
    assert (hbm["name"], dram["name"], dram["policy"]) == ("hbm", "dram", "vllm")
    assert dram["capacity_bytes"] == 10**12 and dram["capacity_blocks"] == 10**12 // (512 * 131072)
    assert {"hit_ratio", "bytes_restored"} <= set(dram)
    assert dram["restore_legs"][0]["kind"] == "spec"  # an empty database: nothing measured here
    assert doc["trace"]["requests"] == 300 and len(doc["trace"]["sha256"]) == 64
    assert [p["capacity_bytes"] for p in doc["sweep"]["points"]] == [10**11, 4 * 10**11, 10**12]
    assert "dram 2/3: 400 GB" in done.stderr  # progress, capacity by capacity
    assert doc["compute"]["kind"] == "spec"
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "docs" / "schemas" / "replay.schema.json").read_text())
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)  # docs/json-outputs.md's shape


def test_the_table_names_the_blocks_each_tier_holds_and_what_was_spec(tmp_path, small_trace):
    done = replay(tmp_path, "--trace", small_trace, "--tier", "hbm=20GB", "--tier", "dram=1TB")
    assert done.returncode == 0, done.stderr
    assert "298" in done.stdout and "14,901" in done.stdout  # 20 GB and 1 TB in 67 MB hash blocks
    assert "spec, not measured on this host" in done.stdout


@pytest.mark.parametrize(("text", "words"), [
    ('{"timestamp": 0, "input_length": 100, "output_length": 1, "hash_ids": [1]}\n{"timestamp": 0}\n',
     ["line 2", "'input_length' missing"]),
    ("", ["empty"]),
    ('{"timestamp": 0, "input_length": 100, "output_length": 1, "hash_ids": [1]}\n{"timestamp": 0, "inp\n',
     ["line 2", "not JSON"]),
    ('{"timestamp": 0, "input_length": 100, "output_length": "1", "hash_ids": [1]}\n', ["line 1", "'output_length'"]),
    ('{"timestamp": 9, "input_length": 100, "output_length": 1, "hash_ids": [1]}\n'
     '{"timestamp": 3, "input_length": 100, "output_length": 1, "hash_ids": [1]}\n', ["line 2", "'timestamp' goes back"]),
    ('{"timestamp": 0, "input_length": 2000, "output_length": 1, "hash_ids": [1, 2, 3, 4, 5, 6, 7, 8]}\n',
     ["line 1", "'hash_ids' holds 8 blocks", "--trace-block-tokens"]),
])
def test_a_bad_trace_is_one_line_and_exit_2(tmp_path, text, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    out = tmp_path / "out.json"
    done = replay(tmp_path, "--trace", str(path), "--tier", "hbm=20GB", "--json", str(out), "--store")
    assert done.returncode == 2
    errors = [x for x in done.stderr.splitlines() if "error" in x]  # (after the progress line "reading …")
    assert len(errors) == 1
    line = errors[0]
    assert line.startswith("kvbench: error: ") and str(path) in line
    for word in words:
        assert word in line
    assert not out.exists() and not (tmp_path / "none.sqlite").exists()  # nothing half-written, no replay stored


@pytest.mark.parametrize("where", ["missing.jsonl", "."])
def test_a_trace_that_is_no_file_is_one_line_and_exit_2(tmp_path, where):
    done = replay(tmp_path, "--trace", str(tmp_path / where), "--tier", "hbm=20GB")
    assert done.returncode == 2
    assert [x for x in done.stderr.splitlines() if "error" in x][0].startswith("kvbench: error: trace ")


def test_a_trace_of_another_block_size_and_one_within_tolerance(tmp_path):
    """A held-out trace of 64-token hash blocks (read with --trace-block-tokens 64), one of whose requests
    names a block more than ceil(input / 64) and another one less: both replayed."""
    rows = [{"timestamp": i * 10, "input_length": 64 * 40 + 5, "output_length": 1,
             "hash_ids": list(range(41 + (i % 3) - 1))} for i in range(30)]
    path = tmp_path / "t64.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = replay(tmp_path, "--trace", str(path), "--trace-block-tokens", "64", "--tier", "hbm=1GB", "--json", "-")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["trace"]["trace_block_tokens"] == 64 and doc["trace"]["requests"] == 30
    assert doc["configs"][0]["hit_ratio"] > 0.9  # every request after the first reuses the shared prefix
    wrong = replay(tmp_path, "--trace", str(path), "--tier", "hbm=1GB")  # read as 512-token blocks: far off
    assert wrong.returncode == 2 and "line 1" in wrong.stderr and "--trace-block-tokens" in wrong.stderr


@pytest.mark.parametrize(("tiers", "words"), [
    (["--tier", "dram=1TB", "--tier", "hbm=20GB"], "hbm is the tier nearest the GPU"),
    (["--tier", "ssd=1TB"], "unknown tier 'ssd'"),
    (["--tier", "dram=1TB:fifo"], "unknown eviction policy 'fifo'"),
    (["--tier", "dram=lots"], "bad --tier dram 'lots'"),
])
def test_a_bad_tier_is_refused(tmp_path, small_trace, tiers, words):
    done = replay(tmp_path, "--trace", small_trace, *tiers)
    assert done.returncode == 2
    assert words in done.stderr
