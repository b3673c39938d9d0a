"""Stored replays (schema version 5), on SQLite and on a real PostgreSQL: a replay read back whole, and a
version 4 database upgraded in place, its runs as they were and the replay table added."""

import sqlalchemy as sa

from kvbench.store import open_store, schema
from tests.store.test_database import ROW, _begin

RECORD = {"host_id": "h" * 64, "kvbench_version": "0", "trace_name": "t.jsonl", "trace_sha256": "a" * 64,
          "trace_block_tokens": 512, "engine_block_tokens": 16, "model": "Llama-3.1-8B", "dtype": "bf16", "tp": 1,
          "policy": "lru", "restore_into": "dram", "executed_run_id": None,
          "configs": [{"label": "dram=1TB", "tiers": [{"name": "dram", "capacity_bytes": 10**12}]}],
          "document": {"trace": {"sha256": "a" * 64}}}


def test_a_replay_is_read_back_as_it_was_stored(db_url):
    store = open_store(db_url)
    _begin(store)  # the host row
    first = store.add_replay(RECORD)
    second = store.add_replay({**RECORD, "policy": "vllm"})
    back = store.replay(first)
    assert {k: back[k] for k in RECORD} == RECORD and back["id"] == first and back["created_at"].endswith("+00:00")
    assert [r["policy"] for r in store.replays()] == ["lru", "vllm"] and store.replays(["x"]) == []
    assert store.replay(second + 1) is None
    store.dispose()


def test_a_version_4_database_is_upgraded_and_its_runs_stay_readable(db_url):
    store = open_store(db_url)
    run = _begin(store)
    store.add_result(run, ROW, [1e-4] * 5)
    store.finish_run(run, "complete")
    with store.engine.begin() as conn:  # what version 4 was: no replay table
        schema.replay.drop(conn)
        conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version").values(value="4"))
    store.dispose()
    store = open_store(db_url)  # opening it upgrades it
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(schema.meta.c.value)).scalar() == str(schema.SCHEMA_VERSION)
    assert [r["bench"] for r in store.results(run)] == ["dram.copy"]
    assert store.replays() == [] and store.replay(store.add_replay(RECORD))["trace_sha256"] == "a" * 64
    store.dispose()


def test_a_merged_host_s_replays_become_the_new_id_s(db_url):
    store = open_store(db_url)
    run = _begin(store, host="o" * 64)
    store.finish_run(run, "complete")
    kept = store.add_replay({**RECORD, "host_id": "o" * 64})
    store.merge_host("o" * 64, "n" * 64)
    assert store.replay(kept)["host_id"] == "n" * 64 and [r["id"] for r in store.replays(["n" * 64])] == [kept]
    store.dispose()
