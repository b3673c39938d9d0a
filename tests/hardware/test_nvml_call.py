"""hardware/nvml.py `call`: an NVML error is a field this GPU or driver does not have (None); anything
else is a bug that fails loudly, never a field that silently disappears (issue 35, item 5)."""

import pynvml
import pytest

from kvbench.hardware.nvml import call


def test_an_nvml_error_is_a_missing_field():
    def not_supported(handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def no_permission(handle, link):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)

    assert call(not_supported, "h") is None and call(no_permission, "h", 0) is None
    assert call(lambda handle: 7, "h") == 7


def test_a_wrong_argument_or_a_bug_raises():
    def takes_two(handle, link):
        return link

    with pytest.raises(TypeError):
        call(takes_two, "h")  # a wrong argument count: the caller's bug, not NVML's answer

    def broken(handle):
        return handle.busId  # an attribute that is not there

    with pytest.raises(AttributeError):
        call(broken, "h")
