"""A recorded /proc and /sys tree for the contention readers and `kvbench doctor`."""

from pathlib import Path


def write_proc(root: Path, cpu: list[int], processes: dict[int, tuple[str, int, int, int]], pressure=None,
               load="3.50 2.00 1.00 5/300 4000", running=5, mhz=None) -> None:
    """A /proc (and cpufreq) tree: `cpu` the aggregate jiffies (user nice system idle iowait irq softirq
    steal), `processes` pid -> (name, ppid, utime + stime, cutime + cstime) in jiffies."""
    proc = root / "proc"
    proc.mkdir(parents=True, exist_ok=True)
    lines = ["cpu  " + " ".join(map(str, cpu)) + " 0 0", "cpu0 1 0 0 0 0 0 0 0 0 0", "cpu1 1 0 0 0 0 0 0 0 0 0",
             f"procs_running {running}", "procs_blocked 0"]
    (proc / "stat").write_text("\n".join(lines) + "\n")
    (proc / "loadavg").write_text(load + "\n")
    for pid, (name, ppid, ticks, children) in processes.items():
        (proc / str(pid)).mkdir(exist_ok=True)
        (proc / str(pid) / "stat").write_text(
            f"{pid} ({name}) S {ppid} 1 1 0 -1 0 0 0 0 0 {ticks} 0 {children} 0 20 0 1 0 100 0 0\n")
    if pressure is not None:
        (proc / "pressure").mkdir(exist_ok=True)
        for resource, (some, full) in pressure.items():
            (proc / "pressure" / resource).write_text(
                f"some avg10=0.00 avg60=0.00 avg300=0.00 total={some}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total={full}\n")
    for i, value in enumerate(mhz or []):
        freq = root / f"sys/devices/system/cpu/cpu{i}/cpufreq"
        freq.mkdir(parents=True, exist_ok=True)
        (freq / "scaling_cur_freq").write_text(f"{value * 1000}\n")
        (freq / "cpuinfo_max_freq").write_text("3000000\n")
