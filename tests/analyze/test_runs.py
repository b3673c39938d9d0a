"""Reading a run: by id, `latest`, `baseline` or an export file, whose parameters are read as
kvbench stores them (a size written "8MiB" is the size in bytes) and checked where they enter."""

import copy
import json
from pathlib import Path

import pytest

from kvbench.analyze.runs import load_document
from kvbench.errors import BadInput

QUICK = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "quick-cpu-vm.json").read_text())


def _no_store():
    raise AssertionError("an export file needs no database")


def test_an_export_s_sizes_written_with_units_are_read_as_bytes(tmp_path):
    doc = copy.deepcopy(QUICK)
    first = next(r for r in doc["results"] if r["bench"] == "dram.copy")
    first["params"]["size"] = "8MiB"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    loaded = load_document(str(path), _no_store)
    assert next(r for r in loaded["results"] if r["bench"] == "dram.copy")["params"]["size"] == 8 << 20


def test_an_export_parameter_that_does_not_parse_is_one_line_naming_the_result(tmp_path):
    doc = copy.deepcopy(QUICK)
    index = next(i for i, r in enumerate(doc["results"]) if r["bench"] == "dram.copy")
    doc["results"][index]["params"]["size"] = "12QB"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(BadInput, match=rf"export file '.*edited.json': result {index}: bad size '12QB'"):
        load_document(str(path), _no_store)
