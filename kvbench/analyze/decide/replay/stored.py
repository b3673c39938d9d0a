"""A replay as the database keeps it (the `replay` table, kvbench/store/replays.py): what it was derived
from (the trace's digest and name, block sizes, model, policy, each configuration's tiers and capacities,
the source of each price: the result ids it was fitted on, or `spec` with the figure) and its summary
figures (the three hit ratios, TTFT p50/p99 per configuration), beside the whole `replay --json` document."""

from __future__ import annotations

from typing import Any


def _price(tier: dict[str, Any]) -> dict[str, Any]:
    legs = [*tier["restore_legs"], *([tier["writeback"]] if tier.get("writeback") else [])]
    return {"tier": tier["name"], "kind": tier["price_kind"],
            "legs": [{"link": leg["link"], "role": "restore" if i < len(tier["restore_legs"]) else "writeback",
                      "kind": leg["kind"], "source": leg["source"], "result_ids": list(leg["result_ids"]),
                      "alpha_us": leg["alpha_us"], "gbps": leg["gbps"]} for i, leg in enumerate(legs)]}


def config_record(config: dict[str, Any]) -> dict[str, Any]:
    """One configuration of a `replay --json` document as stored."""
    return {"label": config["label"],
            "tiers": [{"name": t["name"], "policy": t["policy"], "capacity_bytes": t["capacity_bytes"],
                       "capacity_blocks": t["capacity_blocks"]} for t in config["tiers"]],
            "prices": [_price(t) for t in config["tiers"]],
            "hit_ratio": config["hit_ratio"], "token_hit_ratio": config["token_hit_ratio"],
            "request_hit_ratio": config["request_hit_ratio"],
            "ttft_s": {"p50": config["ttft_s"]["p50"], "p99": config["ttft_s"]["p99"]}}


def replay_record(doc: dict[str, Any], trace_name: str, policy: str) -> dict[str, Any]:
    """The `replay` table's columns (but id, host, version and time) for document `doc`."""
    executed = doc.get("executed") or {}
    return {"trace_name": trace_name, "trace_sha256": doc["trace"]["sha256"],
            "trace_block_tokens": doc["trace"]["trace_block_tokens"],
            "engine_block_tokens": doc["model"]["engine_block_tokens"], "model": doc["model"]["name"],
            "dtype": doc["model"]["dtype"], "tp": doc["model"]["tp"], "policy": policy,
            "restore_into": doc["restore_into"], "executed_run_id": executed.get("run_id"),
            "configs": [config_record(c) for c in doc["configs"]], "document": doc}


def price_result_ids(record: dict[str, Any]) -> list[int]:
    """Every result id a stored replay's prices came from, sorted, once each (spec prices name none)."""
    return sorted({i for c in record["configs"] for p in c["prices"] for leg in p["legs"] for i in leg["result_ids"]})
