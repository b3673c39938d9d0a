"""The documented CI recipe (docs/github-actions.md), run as a shared runner runs it: beside a CPU hog,
job after job of identical code, in one database kept between jobs.

    python benchmarks/ci_recipe.py [--jobs 10] [--hog 2] [--folder DIR]

First the baseline, as the recipe makes it on a new host: `kvbench run --suite acceptance --repeat 3
--tag baseline=1`, and the host's profile (`kvbench host profile -o node.toml`). Then each CI job:
`kvbench run --suite acceptance --tag ci=N`, `kvbench compare baseline latest --measure-again` and `kvbench accept --run
latest --measure-again --profile node.toml`; the job is green when both exit 0. The same job's run is also compared with
the baseline's export whose rates were divided by 0.6 (its times multiplied): a planted 40 % drop, which
must exit 1 with a case `slower`. The hog runs through the baseline and every job, as a busy neighbour
would (`--hog 0` for a quiet box).

Targets (issue 37): identical code green in >= 9 of 10 jobs (exit 1 in none: a red on identical code is
a false alarm); the planted 40 % drop red (exit 1, `slower`) in >= 9 of 10. The load average and how
contended each run was are printed beside them: on a busy box every figure is a busy-box figure.
Exit 1 when a target was missed, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_power import contention_of, kvbench, scaled, start_hog, stop  # noqa: E402

DROP = 0.6  # the planted drop: the new run at 60 % of the baseline's rates


def job(n: int, db: str, folder: Path) -> dict:
    """One CI job's steps; their exit statuses and the compare verdicts."""
    started = time.monotonic()
    ran = kvbench("run", "--suite", "acceptance", "--db", db, "--tag", f"ci={n}",
                  "--json", str(folder / f"run{n}.json"))
    seconds = time.monotonic() - started
    same = kvbench("compare", "baseline", "latest", "--measure-again", "--db", db, "--format", "json")
    accept = kvbench("accept", "--run", "latest", "--measure-again", "--db", db,
                     "--profile", str(folder / "node.toml"), "--junit", str(folder / f"accept{n}.xml"))
    # the job's own run, not `latest`: what accept measured again is a run of its own, the newer one
    run_id = str(json.loads((folder / f"run{n}.json").read_text())["run"]["id"]) if ran.returncode == 0 else "latest"
    planted = kvbench("compare", str(folder / "planted.json"), run_id, "--measure-again", "--db", db,
                      "--format", "json")

    def verdicts(proc) -> list[str]:
        try:
            return [c["verdict"] for c in json.loads(proc.stdout)["comparisons"]]
        except (ValueError, KeyError):
            return [f"no JSON (exit {proc.returncode}): {proc.stderr.strip()[-200:]}"]

    return {"n": n, "run": ran.returncode, "seconds": seconds, "compare": same.returncode,
            "compare_verdicts": verdicts(same), "accept": accept.returncode,
            "accept_line": (accept.stderr.strip().splitlines() or [""])[-1][:200],
            "planted": planted.returncode, "planted_verdicts": verdicts(planted)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10, help="CI jobs of identical code after the baseline")
    parser.add_argument("--hog", type=int, default=2, help="CPU-spinning processes beside every run (0: none)")
    parser.add_argument("--folder", help="where the database and files go (default: a new temporary folder)")
    args = parser.parse_args()
    folder = Path(args.folder or tempfile.mkdtemp(prefix="kvbench-ci-recipe-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{folder / 'kvbench.sqlite'}"
    print(f"CI recipe: {args.jobs} jobs beside a {args.hog}-process hog on {os.cpu_count()} CPUs, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} before it; files in {folder}", flush=True)
    hogs = start_hog(args.hog)
    jobs = []
    try:
        base = kvbench("run", "--suite", "acceptance", "--repeat", "3", "--tag", "baseline=1", "--db", db)
        if base.returncode != 0:
            raise SystemExit(f"the baseline run failed ({base.returncode}): {base.stderr.strip()[-500:]}")
        profile = kvbench("host", "profile", "-o", str(folder / "node.toml"))
        if profile.returncode != 0:
            raise SystemExit(f"host profile failed ({profile.returncode}): {profile.stderr.strip()[-500:]}")
        export = kvbench("export", "baseline", "--db", db, "--format", "json")
        if export.returncode != 0:
            raise SystemExit(f"export baseline failed ({export.returncode}): {export.stderr.strip()[-500:]}")
        (folder / "planted.json").write_text(json.dumps(scaled(json.loads(export.stdout), 1 / DROP)))
        print(f"baseline: 3 runs and node.toml made; load average {os.getloadavg()[0]:.2f}", flush=True)
        for n in range(1, args.jobs + 1):
            jobs.append(job(n, db, folder))
            j = jobs[-1]
            print(f"job {n}: run {j['run']} ({j['seconds']:.0f} s), compare {j['compare']} {j['compare_verdicts']}, "
                  f"accept {j['accept']} ({j['accept_line']}), planted 40 % drop {j['planted']} "
                  f"{j['planted_verdicts']}; load average {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        stop(hogs)
    (folder / "jobs.json").write_text(json.dumps(jobs, indent=1))
    c = contention_of(db)
    green = sum(j["compare"] == 0 and j["accept"] == 0 for j in jobs)
    false_red = sum(j["compare"] == 1 or j["accept"] == 1 for j in jobs)
    caught = sum(j["planted"] == 1 and "slower" in j["planted_verdicts"] for j in jobs)
    total = len(jobs)
    print(f"\n{c['contended']}/{c['results']} ok cases contended, others took {c['others_cpu']:.0%} of the CPUs on "
          "average")
    print(f"identical code: compare exits 0/1/3 in {sum(j['compare'] == 0 for j in jobs)}/"
          f"{sum(j['compare'] == 1 for j in jobs)}/{sum(j['compare'] == 3 for j in jobs)} of {total} jobs; "
          f"accept in {sum(j['accept'] == 0 for j in jobs)}/{sum(j['accept'] == 1 for j in jobs)}/"
          f"{sum(j['accept'] == 3 for j in jobs)}")
    goals = [("identical code green (compare and accept exit 0)", green >= 0.9 * total, f"{green}/{total}"),
             ("identical code red (exit 1) in <= 5 %", false_red <= 0.05 * total, f"{false_red}/{total}"),
             ("planted 40 % drop red (exit 1, slower)", caught >= 0.9 * total, f"{caught}/{total}")]
    for what, met, figure in goals:
        print(f"target: {what}: {figure} ({'met' if met else 'NOT met'})")
    return 0 if all(met for _, met, _ in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
