"""Does `plan` predict a restore it did not measure? Sweep `kv.restore` over block sizes on this
host, then for every interior size leave its result out, let `restore_plan` interpolate the rate
from its neighbours, and compare with what was measured there. Target: within 10 %.

    python benchmarks/plan_interpolation.py [--db URL] [--tokens 2048] [--samples 9]

Figures are printed, never asserted (a benchmark measures; tests/analyze checks the arithmetic).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BLOCKS = [1, 2, 4, 8, 16, 32, 64, 128]  # Llama-3.1-70B bf16: 2 KiB to 256 KiB fragments
TARGET = 0.10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database to fill (default: a temporary SQLite file)")
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--samples", type=int, default=9)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="kvbench-plan-")
    db = args.db or f"sqlite:///{folder}/plan.sqlite"
    suite = Path(folder) / "sweep.toml"
    suite.write_text(f'name = "plan-interpolation"\n[settings]\nsamples = {args.samples}\n[[bench]]\nid = "kv.restore"\n'
                     f'params = {{ model = "Llama-3.1-70B", tokens = {args.tokens}, block_tokens = {BLOCKS}, '
                     'strategy = "host" }\n')
    env = {**os.environ, "KVBENCH_HOST_ID": "plan-interpolation"}
    proc = subprocess.run([sys.executable, "-m", "kvbench", "run", "--suite", str(suite), "--db", db],
                          cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr.strip()[-2000:])
        return proc.returncode

    from kvbench.analyze.decide.restore_plan import restore_plan
    from kvbench.kv.geometry import get_model
    from kvbench.store import open_store

    rows = [r for r in open_store(db, read_only=True).host_results("plan-interpolation", "kv.restore")
            if r["status"] == "ok"]
    model = get_model("Llama-3.1-70B")
    by_block = {r["params"]["block_tokens"]: r for r in rows}
    print(f"kv.restore host, Llama-3.1-70B bf16, {args.tokens} tokens; each interior size predicted from its neighbours")
    print(f"{'fragment':>10} {'measured GB/s':>14} {'predicted GB/s':>15} {'error':>8}")
    worst = 0.0
    for block in BLOCKS[1:-1]:
        others = [r for b, r in by_block.items() if b != block]
        (tier,) = restore_plan(model, args.tokens, "bf16", 1, block, others)
        measured = by_block[block]["gbps_median"]
        error = tier.measured_gbps / measured - 1
        worst = max(worst, abs(error))
        size = block * model.unit_bytes_per_token("bf16")
        print(f"{size // 1024:>7} KiB {measured:>14.2f} {tier.measured_gbps:>15.2f} {error:>+8.1%}")
    print(f"worst error {worst:.1%} (target within {TARGET:.0%}): {'met' if worst <= TARGET else 'NOT met'}")
    return 0 if worst <= TARGET else 1  # a printed goal missed is a failed `make bench`


if __name__ == "__main__":
    sys.exit(main())
