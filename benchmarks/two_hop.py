"""Two-hop restores against their legs: `kv.restore src=file` read straight into DRAM (via=none,
NIXL POSIX), through a staging buffer with the pipeline on and off, on this host. Target: the
pipelined two-hop restore at ≥ 0.9 × the file leg's own rate (the scatter hidden behind it), and
`pipeline=off` near the sum of both legs.

    python benchmarks/two_hop.py [--tokens 2048] [--samples 9] [--chunk 16MiB]

Figures are printed, never asserted (tests/benches/test_kv_twohop.py checks behaviour).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--samples", type=int, default=9)
    parser.add_argument("--chunk", default="16MiB")
    parser.add_argument("--model", default="Llama-3.1-70B")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="kvbench-twohop-")
    suite = Path(folder) / "twohop.toml"
    common = (f'model = "{args.model}", tokens = {args.tokens}, src = "file", src_layout = "page_first", '
              f'dst = "pageable"')
    suite.write_text(f'name = "two-hop"\n[settings]\nsamples = {args.samples}\n'
                     f'[[bench]]\nid = "kv.restore"\nparams = {{ {common}, strategy = "nixl" }}\n'
                     f'[[bench]]\nid = "kv.restore"\nparams = {{ {common}, strategy = "host", via = "pageable", '
                     f'chunk = "{args.chunk}", pipeline = ["on", "off"] }}\n')
    out = Path(folder) / "run.json"
    proc = subprocess.run([sys.executable, "-m", "kvbench", "run", "--suite", str(suite), "--db",
                           f"sqlite:///{folder}/k.sqlite", "--json", str(out)], cwd=REPO, capture_output=True,
                          text=True, env=os.environ)
    if proc.returncode != 0:
        print(proc.stderr.strip()[-2000:])
        return proc.returncode
    results = json.loads(out.read_text())["results"]
    not_ok = [r for r in results if r["status"] != "ok"]
    if not_ok:  # a side that could not run: no figure to hold to the goal (exit 3, with the reason)
        print("two-hop not measured: " + "; ".join(f"{r['status']}: {r['reason']}" for r in not_ok))
        return 3
    direct = next(r for r in results if r["params"].get("via", "none") == "none")
    staged = {r["params"]["pipeline"]: r for r in results if r["params"].get("via", "none") != "none"}
    nbytes = direct["bytes"]
    legs = staged["on"]["metadata"]["legs"]
    read_gbps, scatter_gbps = nbytes / legs["read_s"] / 1e9, nbytes / legs["scatter_s"] / 1e9
    print(f"kv.restore src=file, {args.model}, {args.tokens} tokens ({nbytes / 1e6:.0f} MB), chunk {args.chunk}; "
          f"file on {direct['metadata'].get('filesystem', {}).get('fstype', '?')}, "
          f"{'O_DIRECT' if direct['metadata'].get('direct') else 'page cache'}")
    print(f"  direct (NIXL POSIX, fragments straight into DRAM): {direct['gbps']['median']:.2f} GB/s")
    print(f"  file leg alone (whole blocks into staging):        {read_gbps:.2f} GB/s")
    print(f"  scatter leg alone (staging into layer_first):      {scatter_gbps:.2f} GB/s")
    for mode in ("on", "off"):
        r = staged[mode]
        print(f"  two-hop, pipeline={mode}: {r['gbps']['median']:.2f} GB/s = {r['gbps']['median'] / read_gbps:.2f} x the "
              f"file leg; overlap {r['metadata']['overlap']:.0%}")
    sum_gbps = nbytes / (legs["read_s"] + legs["scatter_s"]) / 1e9
    met = staged["on"]["gbps"]["median"] >= 0.9 * read_gbps
    print(f"  both legs one after the other would give {sum_gbps:.2f} GB/s; target pipelined >= 0.9 x file leg: "
          f"{'met' if met else 'NOT met'}")
    return 0 if met else 1  # a printed goal missed is a failed `make bench`


if __name__ == "__main__":
    sys.exit(main())
