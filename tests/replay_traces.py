"""A tiny Mooncake-format trace the kv.replay tests share (host and CUDA stand-in): 4-token hash blocks;
request 1 reuses [1, 2], request 2 reuses [1] and a partial block's worth."""

import json

TINY_TRACE = [{"timestamp": 0, "input_length": 12, "output_length": 1, "hash_ids": [1, 2, 3]},
              {"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1, 2, 9]},
              {"timestamp": 9, "input_length": 8, "output_length": 1, "hash_ids": [1, 7]}]


def write_tiny_trace(folder) -> str:
    """The tiny trace written as JSONL in `folder`; its path."""
    path = folder / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TINY_TRACE))
    return str(path)
