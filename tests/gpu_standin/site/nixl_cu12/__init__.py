"""Hidden by the kvbench CUDA stand-in (TEST ONLY): NIXL would register the stand-in's device memory,
which is host memory, as GPU memory, and UCX/GDS would fail on it; without NIXL those cases skip."""

raise ImportError("NIXL is hidden by the kvbench CUDA stand-in (its device memory is host memory)")
