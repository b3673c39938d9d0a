"""GPU tests: marked `gpu`, skipped cleanly (with the driver's reason) without a CUDA device."""

import pytest

from kvbench.backends.cuda import cuda_unavailable_reason


def pytest_collection_modifyitems(config, items):
    reason = cuda_unavailable_reason()
    for item in items:
        if "tests/gpu/" in str(item.fspath):
            item.add_marker(pytest.mark.gpu)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
