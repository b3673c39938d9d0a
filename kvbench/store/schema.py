"""Tables (SQLAlchemy Core): host, host_alias, context, run, result, sample, and the schema version.

Version 2 added what a shared, long-lived database needs: the process that owns a run (pid, boot
id, machine) and its heartbeat, so a later kvbench can tell a crashed run from a running one; the
number of cases a run planned, so a partial run is never taken for a whole one; and host aliases,
so history recorded under an older host id stays this host's. Version 3 added when each tag was
set, so the baseline is the run the user named last. Version 4 stores with every run the inventory
it was measured on (`run.facts`: GPUs, links, NICs, NVMe, NUMA, DRAM, as `host.facts` holds them), so
a verdict judges the machine as it was during the run, not as it was at its first run; runs an
older kvbench stored are given their host's first-seen facts, labelled so (`facts_source`). Version 5
added the `replay` table: each `kvbench replay` projection, with the trace's digest, the policy, the
capacities and the ids of the results each price came from, so a plan can be re-derived and compared
across hosts (a projection is no measurement: it never goes into `result`).

Every moment is stored in UTC and read back with its time zone on every database (SQLite keeps
none: `UtcDateTime` adds it back).
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from kvbench.store.records import STATS

SCHEMA_VERSION = 5

metadata = sa.MetaData()


class UtcDateTime(sa.types.TypeDecorator):
    """A moment, stored in UTC and always read back time-zone aware (UTC), whatever the database."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


meta = sa.Table(
    "kvbench_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

host = sa.Table(
    "host", metadata,
    sa.Column("id", sa.String(64), primary_key=True),  # sha256 of the stable identity (or KVBENCH_HOST_ID)
    sa.Column("hostname", sa.String(256), nullable=False),
    sa.Column("facts", sa.JSON, nullable=False),
    sa.Column("first_seen", UtcDateTime(), nullable=False),
)

host_alias = sa.Table(
    "host_alias", metadata,
    sa.Column("old_id", sa.String(64), primary_key=True),  # an id this host had before (an older kvbench's)
    sa.Column("host_id", sa.String(64), nullable=False),
    sa.Column("merged_at", UtcDateTime(), nullable=False),
    sa.Column("old_facts", sa.JSON),
)

context = sa.Table(
    "context", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("facts", sa.JSON, nullable=False),
)

run = sa.Table(
    "run", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("host_id", sa.String(64), sa.ForeignKey("host.id"), nullable=False, index=True),
    sa.Column("context_id", sa.String(64), sa.ForeignKey("context.id"), nullable=False),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    sa.Column("ended_at", UtcDateTime()),
    sa.Column("status", sa.String(16), nullable=False, index=True),  # running | complete | aborted | failed | crashed
    sa.Column("suite", sa.String(256)),
    sa.Column("suite_hash", sa.String(64)),
    sa.Column("kvbench_version", sa.String(32), nullable=False),
    sa.Column("git_sha", sa.String(64)),
    sa.Column("git_dirty", sa.Boolean),
    sa.Column("reason", sa.Text),
    sa.Column("tags", sa.JSON, nullable=False),
    sa.Column("system_state", sa.JSON, nullable=False),
    # version 2
    sa.Column("cases_planned", sa.Integer),
    sa.Column("pid", sa.Integer),
    sa.Column("boot_id", sa.String(64)),
    sa.Column("machine", sa.String(256)),  # the hostname the owning process ran on
    sa.Column("heartbeat_at", UtcDateTime()),
    # version 3
    sa.Column("tags_at", sa.JSON),  # tag → when it was set (ISO 8601, UTC); a tag given at the start: started_at
    # version 4
    sa.Column("facts", sa.JSON),  # the host's inventory when this run began (HostFacts.to_dict())
    sa.Column("facts_source", sa.String(32)),  # FACTS_OF_RUN, or FACTS_FIRST_SEEN for a run stored before version 4
)

FACTS_OF_RUN = "run"  # read when the run began
FACTS_FIRST_SEEN = "first-seen"  # the host's facts from its first run (a run an older kvbench stored)

result = sa.Table(
    "result", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("host_id", sa.String(64)),  # the run's, repeated: a fleet's queries select by host and case
    sa.Column("bench", sa.String(64), nullable=False),
    sa.Column("params", sa.JSON, nullable=False),
    sa.Column("case_hash", sa.String(16), nullable=False, index=True),
    sa.Column("bytes_per_op", sa.BigInteger),
    sa.Column("loops", sa.Integer),
    sa.Column("timer", sa.String(32)),
    *(sa.Column(f"{stat}_s", sa.Float) for stat in STATS),
    sa.Column("gbps_median", sa.Float),
    sa.Column("gbps_p10", sa.Float),
    sa.Column("gbps_p90", sa.Float),
    sa.Column("peak_gbps", sa.Float),
    sa.Column("peak_source", sa.Text),
    sa.Column("efficiency", sa.Float),
    sa.Column("verified", sa.Boolean, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),  # ok | skipped | failed
    sa.Column("reason", sa.Text),
    sa.Column("warnings", sa.JSON, nullable=False),
    sa.Column("extra", sa.JSON, nullable=False),
    # "the latest ok result of each host and case" (fleet), "one case's results on one host" (history);
    # status last so the fleet's grouping reads the index alone (a covering index: ~5x less CPU at 2 M
    # results on SQLite than looking each row's status up in the table)
    sa.Index("ix_result_host_case_run", "host_id", "case_hash", "run_id", "status"),
    sa.Index("ix_result_host_bench", "host_id", "bench"),
)

sample = sa.Table(
    "sample", metadata,
    sa.Column("result_id", sa.Integer, sa.ForeignKey("result.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True),
    sa.Column("seconds", sa.Float, nullable=False),  # seconds per operation
)

replay = sa.Table(
    "replay", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("host_id", sa.String(64), sa.ForeignKey("host.id"), nullable=False, index=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("kvbench_version", sa.String(32), nullable=False),
    sa.Column("trace_name", sa.Text, nullable=False),  # as given: a path or a shipped trace's name
    sa.Column("trace_sha256", sa.String(64), nullable=False, index=True),
    sa.Column("trace_block_tokens", sa.Integer, nullable=False),
    sa.Column("engine_block_tokens", sa.Integer, nullable=False),
    sa.Column("model", sa.String(256), nullable=False),
    sa.Column("dtype", sa.String(16), nullable=False),
    sa.Column("tp", sa.Integer, nullable=False),
    sa.Column("policy", sa.String(32), nullable=False),  # the policy of a tier that names none
    sa.Column("restore_into", sa.String(16), nullable=False),
    sa.Column("executed_run_id", sa.Integer, sa.ForeignKey("run.id", ondelete="SET NULL")),  # --execute's kv.replay run
    # per configuration: tiers (name, policy, capacity), price sources per tier, the three hit ratios, TTFT p50/p99
    sa.Column("configs", sa.JSON, nullable=False),
    sa.Column("document", sa.JSON, nullable=False),  # the whole `replay --json` document
)

# Columns and indexes version 2 added to tables version 1 had (the migration adds them in place).
# The columns each version added to a table that already existed (new tables: create_all makes them).
ADDED_IN = {2: {"run": ("cases_planned", "pid", "boot_id", "machine", "heartbeat_at"), "result": ("host_id",)},
            3: {"run": ("tags_at",)},
            4: {"run": ("facts", "facts_source")},
            5: {}}  # the replay table (new)
