import pytest

from kvbench.errors import BadInput
from kvbench.units import format_gbps, format_size, gbps, parse_size


@pytest.mark.parametrize("text,expected", [
    ("4KiB", 4096), ("1MiB", 1 << 20), ("2GiB", 2 << 30), ("65536", 65536), (65536, 65536),
    ("1GB", 10**9), ("512 B", 512), ("3mib", 3 << 20),
])
def test_parse_size_accepts_the_documented_forms(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["12XB", "", "1.5MiB", "-4", "MiB", "4 KiBs"])
def test_parse_size_rejects_with_the_culprit_named(text):
    with pytest.raises(BadInput, match="bad size"):
        parse_size(text)


def test_format_size_round_trips_binary_units():
    assert format_size(256 << 20) == "256MiB"
    assert format_size(4096) == "4KiB"
    assert format_size(1000) == "1000B"
    assert parse_size(format_size(3 << 30)) == 3 << 30


def test_rates_are_decimal_gigabytes_per_second():
    assert gbps(1e9, 1.0) == 1.0
    assert gbps(63e9, 2.0) == 31.5
    assert format_gbps(None) == "-"
    assert format_gbps(4800.4) == "4,800"
