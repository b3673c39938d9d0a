"""Reading a Mooncake-format trace: the shipped one, and every bad input as one line naming the file,
the line and the key."""

import gzip
import json

import numpy as np
import pytest

from kvbench.errors import BadInput
from kvbench.kv.trace import dense_ids, read_trace


def write(tmp_path, rows, name="t.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


GOOD = {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [7, 8]}


def test_the_shipped_conversation_trace():
    trace = read_trace("mooncake-conversation")
    assert trace.requests == 12031
    assert trace.references == 288500
    assert trace.distinct == 182790
    assert trace.block_tokens == 512
    assert np.all(np.diff(trace.arrival_s) >= 0)
    assert (np.diff(trace.offsets) == -(-trace.input_tokens // 512)).all()  # ceil: the last block partial


def test_ids_are_renumbered_in_order_of_first_appearance(tmp_path):
    path = write(tmp_path, [{**GOOD, "hash_ids": [90, 5]}, {**GOOD, "timestamp": 3.5, "hash_ids": [90, 7]}])
    trace = read_trace(path)
    assert trace.blocks.tolist() == [0, 1, 0, 2]
    assert trace.arrival_s.tolist() == [0.0, 0.0035]
    assert dense_ids(np.array([3, 3, 1])).tolist() == [0, 0, 1]


def test_a_gzipped_trace_and_another_block_size(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(json.dumps({**GOOD, "input_length": 40, "hash_ids": [1, 2, 3]}).encode()))
    assert read_trace(str(path), block_tokens=16).references == 3


@pytest.mark.parametrize(("rows", "words"), [
    (['{"timestamp": 0, '], ["line 1", "not JSON"]),
    (["[1, 2]"], ["line 1", "not an object"]),
    ([GOOD, {k: v for k, v in GOOD.items() if k != "hash_ids"}], ["line 2", "'hash_ids' missing"]),
    ([{**GOOD, "input_length": "1000"}], ["line 1", "'input_length'"]),
    ([{**GOOD, "output_length": -1}], ["line 1", "'output_length'"]),
    ([{**GOOD, "timestamp": True}], ["line 1", "'timestamp'"]),
    ([{**GOOD, "hash_ids": [1, "2"]}], ["line 1", "'hash_ids'"]),
    ([{**GOOD, "timestamp": 5}, {**GOOD, "timestamp": 4}], ["line 2", "'timestamp' goes back"]),
    ([{**GOOD, "hash_ids": [1, 2, 3, 4, 5]}], ["line 1", "'hash_ids' holds 5 blocks", "is 2 (± 1)"]),
    ([], ["empty"]),
])
def test_a_bad_trace_is_one_line_naming_file_line_and_key(tmp_path, rows, words):
    path = write(tmp_path, rows)
    with pytest.raises(BadInput) as e:
        read_trace(path)
    message = str(e.value)
    assert "\n" not in message and path in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(("tokens", "count"), [(1000, 1), (1000, 2), (1000, 3), (512 * 64, 62), (512 * 64, 66)])
def test_hash_ids_within_tolerance_of_the_ceiling_are_read(tmp_path, tokens, count):
    path = write(tmp_path, [{**GOOD, "input_length": tokens, "hash_ids": list(range(count))}])
    assert read_trace(path).references == count


@pytest.mark.parametrize(("tokens", "count"), [(1000, 4), (1000, 0), (512 * 64, 61), (512 * 64, 128)])
def test_hash_ids_far_from_the_ceiling_are_refused(tmp_path, tokens, count):
    path = write(tmp_path, [{**GOOD, "input_length": tokens, "hash_ids": list(range(count))}])
    with pytest.raises(BadInput, match=f"line 1: key 'hash_ids' holds {count} blocks"):
        read_trace(path)


def test_a_long_trace_says_how_far_it_has_read(tmp_path, monkeypatch):
    import kvbench.kv.trace as trace

    monkeypatch.setattr(trace, "PROGRESS_LINES", 2)
    seen = []
    path = write(tmp_path, [{**GOOD, "timestamp": i} for i in range(5)])
    assert read_trace(path, progress=seen.append).requests == 5
    assert seen == [2, 4]


def test_a_missing_file_and_a_folder(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        read_trace(str(tmp_path / "none.jsonl"))
    with pytest.raises(BadInput, match="not a regular file"):
        read_trace(str(tmp_path))
