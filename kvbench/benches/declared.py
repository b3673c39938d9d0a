"""What each built-in benchmark takes: its parameters, declared apart from the code that measures.

A command that describes stored results (`results`, `history`, `compare`) needs a benchmark's
parameters (their defaults, kinds, which were added later), never its measuring code: importing a
benchmark's module loads numpy, the executors and the memory package. `declared_params` answers from
this module alone, and each benchmark class takes its `params` from here, so there is one declaration.

Names whose home is a measuring module (the copy primitives, the KV layouts and executors, the
storage backends, Mooncake's defaults) are written out here; tests/benches/test_declared.py holds
each equal to its home, and every registered benchmark's parameters equal to its declaration.
"""

from __future__ import annotations

from kvbench.benches.params import Param, with_pages
from kvbench.benches.peer_params import PAIR_HOSTS, REMOTE_PEER, added_later
from kvbench.kv.geometry import DTYPE_BYTES, PRESETS

# written out from their homes (see the module's docstring)
COPY_PRIMITIVES = ("memcpy", "memcpy-256KiB", "numpy")  # benches/dram.PRIMITIVES
KV_LAYOUTS = ("layer_first", "page_first", "chunk", "contiguous")  # kv/layouts.LAYOUTS
KV_STRATEGIES = ("host", "host-numpy", "contiguous", "nixl", "gpu-contiguous", "ce-loop", "ce-graph", "ce-batch",
                 "sm-gather", "staged")  # the executors (executors.registry.all_executors())
HANDOFF_STRATEGIES = ("gather-copy-scatter", "peer-read")
MATMUL_DTYPES = ("bf16", "fp16")  # benches/gpu.DTYPES
STORAGE_BACKENDS = ("posix", "gds", "gds_mt")  # benches/storage.BACKENDS
POSIX_APIS = ("auto", "aio", "uring", "posix_aio")  # benches/storage.POSIX_APIS
MOONCAKE_P2P = "P2PHANDSHAKE"  # backends/mooncake.P2P
MOONCAKE_PROTOCOLS = ("tcp", "rdma")  # backends/mooncake.PROTOCOLS

MODEL = Param("text", "Llama-3.1-70B", f"preset ({', '.join(PRESETS)}) or a config.json path")

LOAD = Param("choice", "none", "a kernel running beside the copies on another stream: none, hbm (an HBM-bound "
             "copy kernel) or gemm (fp16 matrix products)", choices=("none", "hbm", "gemm"), added=True)

TRANSPORT = {
    "transport": Param("choice", "nixl", "the data plane: nixl (UCX) | mooncake (Mooncake's Transfer Engine) | both "
                       "(Mooncake timed against NIXL, interleaved; stores the ratio)",
                       choices=("nixl", "mooncake", "both"), added=True),
    "mooncake_metadata": Param("text", MOONCAKE_P2P, "transport=mooncake: how engines find each other: P2PHANDSHAKE, "
                               "etcd://HOST:PORT, http://HOST:PORT/PATH or redis://HOST:PORT", added=True),
    "mooncake_protocol": Param("choice", "tcp", "transport=mooncake: the engine's protocol: tcp | rdma",
                               choices=MOONCAKE_PROTOCOLS, added=True),
    "mooncake_device": Param("text", "", "transport=mooncake, protocol rdma: the NIC(s), e.g. mlx5_0 (empty: the "
                             "engine discovers them)", added=True),
}

DRAM_COPY = {
    "size": Param("size", "256MiB", "bytes copied per operation", minimum=4096),
    "threads": Param("int", 1, "copy threads", minimum=1),
    "src": Param("memory", "pageable", "source memory kind: pageable | numa:N"),
    "dst": Param("memory", "pageable", "destination memory kind: pageable | numa:N"),
    "fragment": Param("size", 0, "copy as fragments of this size (0: one copy)"),
    "primitive": Param("choice", "auto", "copy primitive", choices=("auto", *COPY_PRIMITIVES)),
    "vs": Param("text", "none", "none, or a placement (pageable | numa:N) whose copy is timed interleaved "
                "with this one: the ratio per pair of samples (near vs far NUMA)", added=True),
}

HBM = {
    "size": Param("size", 0, "bytes per buffer (0: max(8 x L2, 1 GiB))"),
    "gpu": Param("int", 0, "GPU index", minimum=0),
}

PCIE = {
    "memory": Param("memory", "pinned", "host memory: pinned | pageable | numa:N (registered)"),
    "engine": Param("choice", "ce", "copy engine (ce) or SM kernel (sm)", choices=("ce", "sm")),
    "size": Param("size", "256MiB", "bytes per copy", minimum=16),
    "gpu": Param("int", 0, "GPU index", minimum=0),
    "backend": Param("choice", "cupy", "CUDA stack: cupy, or torch to compare with", choices=("cupy", "torch")),
    "gpus": Param("choice", "one", "one: the `gpu`; all: every GPU at once (pinned, copy engine)",
                  choices=("one", "all")),
    "load": LOAD,
}

GPU_MATMUL = {
    "m": Param("int", 8192, "rows of A and C (a prefill's tokens)", minimum=1),
    "n": Param("int", 8192, "columns of B and C (a layer's output width)", minimum=1),
    "k": Param("int", 8192, "columns of A, rows of B (a layer's input width)", minimum=1),
    "dtype": Param("choice", "bf16", "element type", choices=MATMUL_DTYPES),
    "gpu": Param("int", 0, "GPU index", minimum=0),
}

GPU_P2P = {
    "pair": Param("text", "0-1", "SRC-DST GPUs (a sweep's \"*\": every ordered pair)"),
    "engine": Param("choice", "ce", "copy engine (cudaMemcpyPeerAsync) or SM kernel on peer memory",
                    choices=("ce", "sm")),
    "direction": Param("choice", "write", "write: the source GPU pushes; read: the destination pulls",
                       choices=("write", "read")),
    "bidir": Param("choice", "no", "yes: both directions at once (the sum; each in directions_gbps)",
                   choices=("no", "yes")),
    "size": Param("size", "256MiB", "bytes per copy (each direction)", minimum=16),
}

KV_TRANSFER = {
    "model": MODEL,
    "tokens": Param("int", 4096, "tokens to move (a multiple of block_tokens)", minimum=1),
    "block_tokens": Param("int", 16, "tokens per KV block", minimum=1),
    "src_layout": Param("choice", "page_first", "source pool layout", choices=KV_LAYOUTS),
    "dst_layout": Param("choice", "layer_first", "destination pool layout", choices=KV_LAYOUTS),
    "dtype": Param("choice", "bf16", "KV element type", choices=tuple(DTYPE_BYTES)),
    "tp": Param("int", 1, "tensor-parallel degree (each GPU holds kv_heads / tp)", minimum=1),
    "strategy": Param("choice", "host", "how fragments are moved (an executor): host ones; nixl for src=file "
                      "| remote; CUDA ones for src=pinned dst=device", choices=KV_STRATEGIES),
    "file_layout": Param("choice", "single", "src=file: one file for the pool, or one file per block",
                         choices=("single", "per_block")),
    "peer": Param("choice", "inproc", "src=remote: the agent holding the pool: inproc | local (another process) | "
                  "remote (started by a launcher, at peer_addr:peer_port)", choices=("inproc", "local", "remote")),
    "src": Param("memory", "pageable", "source memory kind (file, remote: the pool behind NIXL)"),
    "dst": Param("memory", "pageable", "destination memory kind"),
    "concurrency": Param("int", 1, "copy threads", minimum=1),
    "selection": Param("choice", "random", "which pool blocks: random (seeded) or sequential",
                       choices=("random", "sequential")),
    "pool_blocks": Param("int", 0, "blocks in the source pool (0: 4 x the blocks moved)", minimum=0),
    "seed": Param("int", 0, "seed of the random block selection", minimum=0),
    "via": Param("choice", "none", "src=file | remote: none reads fragments straight into dst; pageable or "
                 "pinned stages whole blocks through host memory, then the strategy scatters them",
                 choices=("none", "pageable", "pinned"), added=True),
    "chunk": Param("size", "16MiB", "via: bytes read into a staging buffer at a time (whole blocks, at least "
                   "one)", minimum=4096, added=True),
    "load": LOAD,
    "requests": Param("int", 1, "src=remote strategy=nixl: concurrent requests per burst (1 to 64), each its "
                      "own random block table of `tokens` tokens (the disaggregated prefill → decode handoff)",
                      minimum=1, added=True),
    "mode": Param("choice", "pull", "src=remote strategy=nixl: pull (this side reads the peer's pool) or push "
                  "(this side writes its pool into the peer's slots)", choices=("pull", "push"), added=True),
    "pipeline": Param("choice", "on", "via: read chunk k+1 while chunk k is scattered (on), or one after the "
                      "other (off)", choices=("on", "off"), added=True),
    **added_later({**REMOTE_PEER, **PAIR_HOSTS}),  # peer=remote (and peer=local's timeout_s)
    **TRANSPORT,  # src=remote, strategy=nixl: the pool's fragments over NIXL, Mooncake, or both
}

KV_HANDOFF = {
    "model": MODEL,
    "tokens": Param("int", 4096, "tokens handed off (a multiple of both block sizes)", minimum=1),
    "pair": Param("text", "0-1", "PREFILL-DECODE GPUs (a sweep's \"*\": every ordered pair)"),
    "strategy": Param("choice", "gather-copy-scatter", "gather + peer copy + scatter, or one peer-reading "
                      "kernel", choices=HANDOFF_STRATEGIES),
    "src_layout": Param("choice", "layer_first", "prefill pool layout (vLLM: layer_first)", choices=KV_LAYOUTS),
    "src_block_tokens": Param("int", 16, "prefill pool's tokens per block", minimum=1),
    "dst_layout": Param("choice", "page_first", "decode pool layout (SGLang: page_first)", choices=KV_LAYOUTS),
    "dst_block_tokens": Param("int", 64, "decode pool's tokens per block", minimum=1),
    "dtype": Param("choice", "bf16", "KV element type", choices=tuple(DTYPE_BYTES)),
    "tp": Param("int", 1, "tensor-parallel degree (each GPU holds kv_heads / tp)", minimum=1),
    "selection": Param("choice", "random", "which prefill pool blocks: random (seeded) or sequential",
                       choices=("random", "sequential")),
    "pool_blocks": Param("int", 0, "blocks in the prefill pool (0: 4 x the blocks moved)", minimum=0),
    "seed": Param("int", 0, "seed of the random block selection", minimum=0),
}

NET = {
    "local": Param("memory", "pageable", "this side's memory: pageable | numa:N | pinned | device"),
    "remote": Param("memory", "pageable", "the peer's memory kind"),
    "block_size": Param("size", "1MiB", "bytes per descriptor", minimum=1),
    "batch": Param("int", 64, "descriptors per request", minimum=1),
    "threads": Param("int", 0, "UCX backend threads (0: default)", minimum=0),
    "peer": Param("choice", "inproc", "far side: inproc | local (another process) | remote (started by a launcher)",
                  choices=("inproc", "local", "remote")),
    **REMOTE_PEER,
    "rails": Param("text", "", "UCX devices to deal the batch over, one agent each, e.g. mlx5_0:1,mlx5_1:1; or "
                   "a number N: UCX spreads each request over up to N devices (empty: UCX's choice)"),
    "net_devices": Param("text", "", "the devices UCX may use (UCX_NET_DEVICES), e.g. mlx5_0:1,mlx5_1:1; "
                         "with rails=N, the devices it spreads over", added=True),
    **PAIR_HOSTS,
    **TRANSPORT,
}

STORAGE = {
    "backend": Param("choice", "posix", "NIXL backend", choices=STORAGE_BACKENDS),
    "api": Param("choice", "auto", "POSIX engine: auto | aio (libaio) | uring (io_uring) | posix_aio",
                 choices=POSIX_APIS),
    "target": Param("memory", "pageable", "memory side: pageable | numa:N | pinned | device"),
    "io_size": Param("size", "1MiB", "bytes per I/O (descriptor)", minimum=512),
    "batch": Param("int", 32, "I/Os per request (in flight)", minimum=1),
    "threads": Param("int", 0, "backend threads (0: the backend's default)", minimum=0),
    "files": Param("int", 1, "files the I/Os spread over", minimum=1),
    "file_size": Param("size", "256MiB", "bytes per file", minimum=4096),
    "direct": Param("int", 1, "O_DIRECT (1) or buffered (0)", minimum=0),
    "pattern": Param("choice", "sequential", "offset order", choices=("sequential", "random")),
    "path": Param("text", "", "directory for the files (default: the system temp dir)"),
    "seed": Param("int", 0, "seed of the random order", minimum=0),
}
KV_REPLAY = {
    "trace": Param("text", "mooncake-conversation", "Mooncake-format trace (a path, or the shipped mooncake-conversation)"),
    "trace_block_tokens": Param("int", 512, "tokens per hash block of the trace", minimum=1),
    "start": Param("int", 6000, "the window's first request", minimum=0),
    "requests": Param("int", 16, "requests in the window", minimum=1),
    "model": MODEL,
    "dtype": Param("choice", "bf16", "KV element type", choices=tuple(DTYPE_BYTES)),
    "tp": Param("int", 1, "tensor-parallel degree (each GPU holds kv_heads / tp)", minimum=1),
    "block_tokens": Param("int", 16, "tokens per engine (paged) block", minimum=1),
    "pool": Param("size", "1GiB", "bytes of the page_first source pool the window's blocks are placed in",
                  minimum=1 << 20),
    "dest": Param("size", "1GiB", "bytes of the layer_first destination a request is gathered into, chunk by chunk",
                  minimum=1 << 20),
    "src": Param("memory", "pageable", "where the pool is: pageable | numa:N (DRAM), pinned (with dst=device), or "
                 "file (read O_DIRECT into a DRAM staging buffer, then gathered)"),
    "dst": Param("memory", "pageable", "destination memory kind: pageable | numa:N, or device[:N] (HBM, from "
                 "src=pinned by a CUDA strategy)"),
    "path": Param("text", "", "src=file: directory for the pool file (default: the system temp dir)"),
    "strategy": Param("choice", "host", "executor: host ones into DRAM; a CUDA gather into device",
                      choices=("host", "host-numpy", "ce-loop", "ce-graph", "ce-batch", "sm-gather", "staged")),
    "concurrency": Param("int", 1, "copy threads", minimum=1),
}

# bench id → its parameters as registered (`pages` added where it takes host memory: `with_pages`)
DECLARED: dict[str, dict[str, Param]] = {bench_id: with_pages(params) for bench_id, params in {
    "dram.copy": DRAM_COPY,
    "hbm.read": HBM, "hbm.write": HBM, "hbm.copy": HBM,
    "pcie.h2d": PCIE, "pcie.d2h": PCIE, "pcie.bidir": PCIE,
    "gpu.matmul": GPU_MATMUL,
    "gpu.p2p": GPU_P2P,
    "kv.restore": KV_TRANSFER, "kv.offload": KV_TRANSFER,
    "kv.handoff": KV_HANDOFF,
    "kv.replay": KV_REPLAY,
    "net.write": NET, "net.read": NET,
    "storage.read": STORAGE, "storage.write": STORAGE,
}.items()}


def declared_params(bench_id: str) -> dict[str, Param] | None:
    """The parameters of built-in benchmark `bench_id`, as registered; None for an id not built in
    (a plugin's, or a benchmark this kvbench no longer has): `registry.find_bench` then."""
    return DECLARED.get(bench_id)
