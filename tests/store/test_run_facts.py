"""Every run keeps the inventory it was measured on (schema version 4), on SQLite and on a real
PostgreSQL; a database an older kvbench made is upgraded in place, its runs given their host's
first-seen facts and labelled so."""

import sqlalchemy as sa

from kvbench.analyze.runs import run_document
from kvbench.store import open_store, schema
from tests.store.test_database import ROW

FIRST = {"hostname": "box", "gpus": [{"index": 0, "bus_id": "0000:17:00.0", "name": "H200", "serial": "A"}]}
LATER = {"hostname": "box", "gpus": []}


def _run(store, facts=None):
    store.ensure_host("h" * 64, "box", FIRST)  # the host row keeps what was seen first
    store.ensure_context("c" * 64, {"numpy": "2"})
    run = store.begin_run(host_id="h" * 64, context_id="c" * 64, suite="quick", suite_hash=None, kvbench_version="0",
                          git_sha=None, git_dirty=None, tags={}, system_state={}, facts=facts)
    store.add_result(run, ROW, [1e-4] * 5)
    store.finish_run(run, "complete")
    return run


def test_each_run_is_read_back_with_its_own_facts_not_its_host_s_first_ones(db_url):
    store = open_store(db_url)
    first, later = _run(store, FIRST), _run(store, LATER)
    assert run_document(store, first)["host"]["facts"] == FIRST
    doc = run_document(store, later)
    assert doc["host"]["facts"] == LATER and doc["host"]["facts_source"] == schema.FACTS_OF_RUN
    assert [(rid, facts) for rid, facts, _src in store.runs_facts(["h" * 64])] == [(first, FIRST), (later, LATER)]
    store.dispose()


def test_a_version_3_database_is_upgraded_and_its_runs_keep_their_host_s_first_seen_facts_labelled(db_url):
    store = open_store(db_url)
    old = _run(store, None)
    with store.engine.begin() as conn:  # what version 3 was: no per-run facts
        for column in ("facts", "facts_source"):
            conn.execute(sa.text(f"ALTER TABLE run DROP COLUMN {column}"))
        conn.execute(schema.meta.update().where(schema.meta.c.key == "schema_version").values(value="3"))
    store.dispose()
    store = open_store(db_url)  # opening it upgrades it
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(schema.meta.c.value)).scalar() == str(schema.SCHEMA_VERSION)
    doc = run_document(store, old)
    assert doc["host"]["facts"] == FIRST and doc["host"]["facts_source"] == schema.FACTS_FIRST_SEEN
    new = _run(store, LATER)  # a run of the upgraded database keeps its own
    assert run_document(store, new)["host"]["facts_source"] == schema.FACTS_OF_RUN
    assert run_document(store, new)["host"]["facts"] == LATER
    store.dispose()
