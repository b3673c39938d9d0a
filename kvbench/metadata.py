"""Every key a result's `metadata` may carry, with its unit and meaning: one registry, so the
benchmarks that write a key and the analyses that read it (acceptance, plots, reports, plans)
agree on its name and unit. A test runs the benchmarks and fails on a key missing here.

Analyses read keys through the constants below, never through a string of their own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    name: str
    unit: str  # "" where the value has none (a name, a flag, a nested record)
    meaning: str


_KEYS = (
    # every benchmark
    Key("buffers", "", "each buffer's kind, size (bytes) and NUMA node, by role (src, dst, host, local, ...); "
        "numa_unknown: why the node is unknown (a refused move_pages query, as on gVisor)"),
    Key("host_pages", "", "the page size every host buffer of the case was asked to have (`pages`: base | thp | "
        "hugetlb-2M | hugetlb-1G) and each buffer as allocated (`buffers`: kind, size_bytes, pages, huge_fraction "
        "= bytes on huge pages over the buffer's mapping, read from /proc/self/smaps, huge_page_bytes, "
        "pages_warning when backed short of what was asked); docs/measurement.md, \"Page size\""),
    Key("warning", "", "what makes this result less than clean, in words (kept beside the case's own)"),
    Key("bottleneck", "", "the path segment whose spec peak the result is judged against"),
    Key("overhead_fraction", "fraction", "timer and loop overhead over one sample"),
    Key("timer", "", "how samples were timed: perf_counter, cuda_events (gated), cuda_events_ungated, ..."),
    Key("traceback", "", "the last frames of the error of a failed case"),
    Key("bytes_counted", "", "what bytes_per_op counts (once, one direction, both directions, all GPUs)"),
    Key("contention", "", "what else the box did while the case was timed (docs/contention.md): `contended` "
        "(reasons, in words; empty when clean), `faults` (GPU ECC errors, XIDs), `host` (fractions of CPU or wall "
        "time, load, runnable tasks, CPU MHz, the busiest other processes in CPUs) and `gpus` by bus id (MHz, "
        "throttle reasons, °C, W, other processes, ECC and XID counts, held-down fractions)"),
    Key("precision", "fraction", "the stopping rule: reached (half-width of the median's 95 % confidence interval "
        "over the median; null below 6 samples), target, samples taken and why sampling stopped"),
    Key("paired", "ratio", "a ratio measured in the case: `against` (the other side's parameters where they differ), "
        "this case's rate over the other side's per pair of interleaved samples (median, p10, p90, pairs, "
        "precision, ratios) and the other side's GB/s (against_gbps)"),
    # copies on the host and KV
    Key("primitive", "", "the host copy primitive dram.copy chose"),
    Key("executor", "", "the executor that moved the bytes"),
    Key("primitive_trial_gbps", "GB/s", "each candidate primitive's rate in the trial that chose one"),
    Key("fragments", "count", "pieces the strategy submits per operation (1 for a contiguous ceiling)"),
    Key("layout_fragments", "count", "pieces the KV layout has per restore"),
    Key("fragment_bytes", "bytes", "one KV fragment: one tensor of one layer for block_tokens tokens"),
    Key("model_bytes_per_token", "bytes", "KV bytes one token occupies on one GPU"),
    Key("blocks", "count", "KV blocks moved per operation"),
    Key("pool_blocks", "count", "KV blocks in the source pool"),
    Key("selection", "", "which pool blocks: random (seeded) or sequential"),
    Key("tokens_per_s", "tokens/s", "KV tokens moved per second (median sample)"),
    Key("us_per_fragment", "µs", "median seconds per operation over the fragments submitted"),
    Key("load", "ms", "load=: the kernel beside the copies — kind, its median time alone and under load (ms), "
        "kernel_slowdown (under / alone), launches, launches_in_copy_windows (the launches at least half inside "
        "a timed copy window: the only ones 'under load'), copy_windows"),
    Key("legs", "s", "two-hop: each leg of one restore timed alone (read_s: into staging; scatter_s: into dst)"),
    Key("overlap", "fraction", "two-hop: the shorter leg's share hidden behind the longer, (read + scatter - total) "
        "/ min(read, scatter)"),
    Key("chunks", "count", "two-hop: staging reads per restore"),
    Key("chunk_bytes", "bytes", "two-hop: bytes of one staging read (whole blocks)"),
    Key("staging_buffers", "count", "two-hop: staging buffers chunks rotate through"),
    Key("request_ms", "ms", "one whole restore timed alone, again and again: p50, p90, p99, max (ms) and n"),
    # compute
    Key("tflops", "TFLOP/s", "dense matrix-multiply rate (1e12 multiply-add pairs × 2 per second), median sample"),
    Key("matmul_flops", "FLOP", "floating-point operations of one product: 2 × m × n × k"),
    Key("max_rel_error", "fraction", "largest relative error of the checked slice against its fp32 reference"),
    Key("spec_tflops", "TFLOP/s", "the GPU's datasheet dense rate for this element type (spec, not measured)"),
    Key("spec_tflops_source", "", "where spec_tflops comes from"),
    Key("gpu_name", "", "the GPU's name as the CUDA runtime gives it"),
    # GPU
    Key("gpu", "", "CUDA device number"),
    Key("gpu_bus_id", "", "the GPU's PCI bus id (stable across CUDA_VISIBLE_DEVICES)"),
    Key("link", "", "PCIe gen/width and their max, read while the copies ran (under_load) or after"),
    Key("clocks_mhz", "MHz", "SM and memory clocks read with the link"),
    Key("pcie_replay_delta", "count", "PCIe replay counter increase across the case"),
    Key("engine", "", "copy engine (ce) or SM kernel (sm)"),
    Key("registered", "", "the host buffer was page-locked in place (cudaHostRegister)"),
    Key("gpu_numa_node", "", "the NUMA node NVML says the GPU hangs off"),
    Key("host_numa_node", "", "the NUMA node the host buffer's pages are on"),
    Key("far_numa", "", "the host buffer is on another NUMA node than the GPU"),
    Key("directions_gbps", "GB/s", "pcie.bidir: each direction, their sum, overlap and whether each stayed contended; "
        "gpu.p2p bidir=yes: each direction on its own stream's time, nvbandwidth_sum (their sum: nvbandwidth's "
        "bidirectional figure) and sum (both directions' bytes over the slowest window, kvbench's median)"),
    Key("buffer_bytes", "bytes", "HBM buffer size"),
    Key("l2_bytes", "bytes", "the GPU's L2 size"),
    Key("launch", "", "kernel grid and block"),
    Key("traffic_gbps", "GB/s", "hbm.copy: read plus write traffic"),
    Key("gpus", "", "gpus=all: the CUDA devices that copied together"),
    Key("topology", "", "gpus=all: NVML's common-ancestor relation of every GPU pair"),
    Key("per_gpu_gbps", "GB/s", "gpus=all: each GPU's rate from its own stream's events"),
    Key("sum_of_gpus_gbps", "GB/s", "gpus=all: the per-GPU rates added"),
    Key("per_gpu_link", "", "gpus=all: each GPU's link facts"),
    Key("per_gpu_host", "", "gpus=all: each GPU's host buffer and its NUMA placement"),
    Key("per_gpu_note", "", "gpus=all: how per-GPU rates were taken"),
    Key("placement", "", "gpus=all: where each GPU's host buffer was placed"),
    Key("backend", "", "the CUDA stack of a pcie case (torch)"),
    Key("transport", "", "net.* and remote kv.restore: the data plane that moved the bytes (nixl | mooncake | both: "
        "Mooncake timed, NIXL its interleaved pair); docs/mooncake.md"),
    Key("torch", "", "torch's version"),
    # storage and network
    Key("nixl_backend", "", "the NIXL backend that served the requests (query_xfer_backend)"),
    Key("nixl_version", "", "NIXL's version"),
    Key("requests", "count", "prepared NIXL requests cycled through (kv.restore requests=R: the requests of one burst, "
        "posted at once)"),
    Key("mode", "", "kv.restore burst: pull (this side reads the peer's pool) or push (it writes into the peer's slots)"),
    Key("request_fragments", "count", "kv.restore burst: fragments of one request (its own block table)"),
    Key("telemetry", "µs", "NIXL's post and transfer time of the last request, and its descriptors"),
    Key("posix_api", "", "the POSIX plugin's I/O engine"),
    Key("direct", "", "files opened O_DIRECT"),
    Key("page_cache", "", "bytes came from the page cache, not the device"),
    Key("filesystem", "", "the files' mount point, filesystem type and device"),
    Key("files", "count", "files the pool or the I/Os spread over"),
    Key("file_bytes", "bytes", "bytes per file"),
    Key("gds_compat_mode", "", "cuFile's allow_compat_mode: GDS may have gone through host memory"),
    Key("iops", "I/O/s", "I/Os per second (median sample)"),
    Key("ucx_env", "", "the UCX_* environment that steers transports and devices"),
    Key("rails", "", "the UCX devices the batch was dealt over (rails=a,b), or UCX may spread over (rails=N)"),
    Key("rail_bytes", "bytes", "each rail's bytes per operation where known: dealt by kvbench (rails=a,b), or "
        "UCX's planned share (rails=N; UCX does not count per lane), with how it is known"),
    Key("rail_counters", "bytes", "each rail device's kernel byte counters (tx_bytes, rx_bytes) over the whole case, "
        "or why they cannot be read; they include headers and other traffic"),
    Key("ucx_protocols", "", "UCX's protocol table rows for remote writes and reads"),
    Key("ucx_devices", "", "transport/device pairs UCX used"),
    Key("gpu_memory", "", "either side of a network case was GPU memory"),
    Key("cudart", "", "ce-batch: the CUDA runtime library cudaMemcpyBatchAsync came from (path, found_via: "
        "cuda.pathfinder or soname, version as that library reports it, e.g. 13000)"),
    # GPU to GPU (gpu.p2p, kv.handoff)
    Key("pair", "", "SRC-DST CUDA devices of a GPU-to-GPU case"),
    Key("peer_access", "", "each direction (\"a->b\": a may reach b's memory) where peer access was enabled"),
    Key("peer_link", "", "the pair's link from NVML: nvlink (links, version, via), pcie, or none (staged through host)"),
    Key("initiators", "", "gpu.p2p: the GPU whose stream (copy engine or SMs) runs each direction"),
    Key("nvbandwidth_equivalent", "", "gpu.p2p: the nvbandwidth testcase that measures the same copy"),
    Key("strategy", "", "kv.handoff: how the KV moved (gather-copy-scatter, peer-read)"),
    Key("decode_pool_blocks", "count", "kv.handoff: blocks in the decode GPU's pool (the rest must stay untouched)"),
    Key("ttft_added_ms", "ms", "kv.handoff: one whole handoff timed alone (p50, p99 ms, tokens): the time it adds "
        "before the decode GPU's first token"),
    Key("cluster", "", "a launched pattern's pair: pattern, round, src_host, dst_host, src_rank, dst_rank and "
        "concurrency (pairs moving at once in its round)"),
    # kv.replay (a window of a serving trace's restores)
    Key("dest_blocks", "count", "kv.replay: engine blocks the destination holds (a larger restore goes in chunks)"),
    Key("trace_sha256", "", "kv.replay: sha256 of the trace file the window was read from"),
    Key("replay_request_s", "seconds", "kv.replay: each window request's restore, the median over every pass"),
    Key("replay_requests", "", "kv.replay: the trace index of each window request that restores anything"),
    Key("replay_tokens", "tokens", "kv.replay: each such request's restored (prefix-hit) tokens"),
)
KEYS: dict[str, Key] = {k.name: k for k in _KEYS}

# The keys analyses read.
BOTTLENECK = "bottleneck"
CLUSTER = "cluster"
CONTENTION = "contention"
DIRECTIONS_GBPS = "directions_gbps"
FAR_NUMA = "far_numa"
FRAGMENT_BYTES = "fragment_bytes"
FRAGMENTS = "fragments"
GPU_BUS_ID = "gpu_bus_id"
GPU_NUMA_NODE = "gpu_numa_node"
HOST_PAGES = "host_pages"
HOST_NUMA_NODE = "host_numa_node"
LINK = "link"
PAIRED = "paired"
PCIE_REPLAY_DELTA = "pcie_replay_delta"
REQUEST_MS = "request_ms"
TTFT_ADDED_MS = "ttft_added_ms"
TFLOPS = "tflops"
PER_GPU_GBPS = "per_gpu_gbps"
PRECISION = "precision"
PER_GPU_LINK = "per_gpu_link"
WARNING = "warning"


def unknown(keys) -> list[str]:
    """The names among `keys` that no benchmark may write (a typo, or a key to register here)."""
    return sorted(k for k in keys if k not in KEYS)
