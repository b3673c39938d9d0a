"""Start-up: how fast kvbench answers. Each command that only reads a small database (`info`, `list`,
`host list`, `results`, `tag`, `history`, `compare`) run as its own `kvbench` process on a database of
two small real runs, beside its target (< 0.4 s to complete); `report` of one run (< 5 s); and, unless
--no-suite, the quick suite (`kvbench run --suite quick`, what `make run` runs): seconds to its first
result line (the issue's < 45 s is from a fresh clone, which includes installing: that is measured only
with --fresh-clone, which needs pip to reach its index or cache) and seconds of the whole (< 30 s).

    python benchmarks/startup.py [--repeat 5] [--no-suite] [--fresh-clone]

Each command is timed `--repeat` times after one warm-up (which also writes Python's bytecode cache, as
any second use of a clone has it: PYTHONDONTWRITEBYTECODE is cleared for the children); the median is
held to the target, the fastest and the median CPU seconds (user + system, which a busy box sways
less than wall time) are printed beside it. The load average is printed first: on a busy
box every figure is a busy-box figure. Figures are printed, never asserted (tests hold behaviour:
tests/test_startup_imports.py checks what a read-only command imports). Exit 1 when a printed target
was missed, 3 when a figure could not be measured (its reason printed), else 0.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMAND_S = 0.4  # target: a read-only command on a small database completes within this
REPORT_S = 5.0  # target: report of one run (HTML with figures)
SUITE_S = 30.0  # target: the quick suite's cases, quiet box
FIRST_RESULT_S = 45.0  # target: fresh clone → first result line of `make run`, quiet box
SEED = ["run", "--bench", "dram.copy", "--set", "size=4MiB", "--set", "threads=1", "--samples", "5"]


def child_env(db: str) -> dict[str, str]:
    env = {**os.environ, "KVBENCH_DB": db, "COLUMNS": "120"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's clone keeps its bytecode after the first start
    env.pop("KVBENCH_HOST_ID", None)  # this box's own identity, read as a user's command reads it
    return env


def kvbench(args: list[str], env: dict[str, str], timeout: float = 600) -> tuple[float, subprocess.CompletedProcess]:
    """(wall seconds, the process) of one `kvbench ARGS`, from the process's start to its end; the CPU
    seconds it used (user + system) are left in `proc.cpu_s` (less swayed by a busy box than wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kvbench", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout)
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)  # type: ignore[attr-defined]
    return seconds, proc


def timed(label: str, args: list[str], env: dict[str, str], repeat: int, target: float) -> bool | None:
    """Print `label`'s median and fastest of `repeat` runs beside `target`; True met, False missed, None
    when the command failed (its error printed)."""
    _, proc = kvbench(args, env)  # warm-up: bytecode written, files in the page cache
    if proc.returncode not in (0, 1, 3):  # 1 and 3 are verdicts (compare: slower; INCOMPLETE), not faults
        print(f"  {label:<24} not measured: exit {proc.returncode}: {_last_line(proc.stderr)}")
        return None
    runs = [kvbench(args, env) for _ in range(repeat)]
    seconds = [wall for wall, _ in runs]
    cpu = statistics.median(proc.cpu_s for _, proc in runs)
    median = statistics.median(seconds)
    met = median < target
    print(f"  {label:<24} {median:6.2f} s median, {min(seconds):5.2f} s fastest of {repeat} ({cpu:5.2f} s CPU)   "
          f"target < {target:g} s: {'met' if met else 'MISSED'}")
    return met


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def seed(env: dict[str, str]) -> list[int] | str:
    """Two small real runs in the database; their ids, or why they could not be made."""
    ids = []
    for _ in range(2):
        _, proc = kvbench([*SEED, "--json", "-"], env)
        if proc.returncode != 0:
            return f"seeding run failed (exit {proc.returncode}): {_last_line(proc.stderr)}"
        match = re.search(r'"run_id":\s*(\d+)', proc.stdout) or re.search(r'"id":\s*(\d+)', proc.stdout)
        if not match:
            return "seeding run printed no run id"
        ids.append(int(match.group(1)))
    return ids


def quick_suite(env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(seconds to the first result line, seconds of the whole run, the process) of the quick suite."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "kvbench", "run", "--suite", "quick"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if first is None and re.search(r"\d+(\.\d+)?\s*GB/s", line):
            first = time.monotonic() - started
    proc.wait()
    whole = time.monotonic() - started
    done = subprocess.CompletedProcess(proc.args, proc.returncode, "".join(lines), "")
    return (first if first is not None else float("nan")), whole, done


def fresh_clone(workdir: Path) -> tuple[float | None, str]:
    """Seconds from `git clone` to the first result line of `make run` in the clone, or (None, why)."""
    clone = workdir / "clone"
    started = time.monotonic()
    proc = subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"git clone failed: {_last_line(proc.stderr)}"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "KVBENCH_DB", "PYTHONDONTWRITEBYTECODE")}
    make = subprocess.Popen(["make", "run"], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    for line in make.stdout:
        if re.search(r"\d+(\.\d+)?\s*GB/s", line):
            seconds = time.monotonic() - started
            make.kill()
            make.wait()
            return seconds, ""
    make.wait()
    return None, f"make run printed no result (exit {make.returncode})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each command (after one warm-up)")
    parser.add_argument("--no-suite", action="store_true", help="skip the quick suite (minutes on a busy box)")
    parser.add_argument("--fresh-clone", action="store_true", help="also clone this repository and time `make run` "
                        "to its first result line (installs a virtual environment: pip needs its index or cache)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"start-up on {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"({'a busy box: every figure is a busy-box figure' if load[0] > 0.5 * (os.cpu_count() or 1) else 'quiet'})")
    verdicts: list[bool | None] = []
    with tempfile.TemporaryDirectory(prefix="kvbench-startup-") as tmp:
        work = Path(tmp)
        env = child_env(f"sqlite:///{work / 'small.sqlite'}")
        runs = seed(env)
        if isinstance(runs, str):
            print(f"commands not measured: {runs}")
            return 3
        first, second = runs
        print(f"read-only commands on a database of 2 small runs ({args.repeat} timed runs each):")
        verdicts.append(timed("--version", ["--version"], env, args.repeat, COMMAND_S))
        for label, cmd in [("info", ["info"]), ("list", ["list"]), ("host list", ["host", "list"]),
                           ("results latest", ["results", "latest"]), ("tag", ["tag", str(first), "startup"]),
                           ("history dram.copy", ["history", "dram.copy"]),
                           ("compare", ["compare", str(first), str(second)])]:
            verdicts.append(timed(label, cmd, env, args.repeat, COMMAND_S))
        print("report of one run (HTML with figures):")
        verdicts.append(timed("report", ["report", str(second), "-o", str(work / "report.html")], env,
                              max(1, args.repeat // 2), REPORT_S))
        if args.no_suite:
            print("quick suite: not run (--no-suite)")
        else:
            suite_env = child_env(f"sqlite:///{work / 'suite.sqlite'}")
            first_s, whole_s, proc = quick_suite(suite_env)
            print("quick suite (kvbench run --suite quick, what make run runs; virtual environment ready):")
            if proc.returncode not in (0, 1):
                print(f"  not measured: exit {proc.returncode}: {_last_line(proc.stdout)}")
                verdicts.append(None)
            else:
                ran = re.search(r"(\d+) ok · (\d+) failed · (\d+) skipped", proc.stdout)
                print(f"  first result line        {first_s:6.1f} s   (fresh clone target < {FIRST_RESULT_S:g} s "
                      "includes the install: --fresh-clone)")
                met = whole_s < SUITE_S
                print(f"  whole run                {whole_s:6.1f} s   target < {SUITE_S:g} s quiet: "
                      f"{'met' if met else 'MISSED'}   ({ran.group(0) if ran else 'no summary line'})")
                verdicts.append(met)
        if args.fresh_clone:
            seconds, why = fresh_clone(work)
            if seconds is None:
                print(f"fresh clone → first result line: not measured: {why}")
                verdicts.append(None)
            else:
                met = seconds < FIRST_RESULT_S
                print(f"fresh clone → first result line of make run: {seconds:.1f} s   target < {FIRST_RESULT_S:g} s "
                      f"quiet: {'met' if met else 'MISSED'}")
                verdicts.append(met)
        else:
            print("fresh clone → first result line of make run: not measured (pass --fresh-clone)")
        shutil.rmtree(work / "clone", ignore_errors=True)
    if False in verdicts:
        return 1
    return 3 if None in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
