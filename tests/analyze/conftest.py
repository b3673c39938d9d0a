"""The stored real run that the acceptance tests judge (tests/analyze/rules.py)."""

import pytest

from tests.analyze.rules import quick_run


@pytest.fixture
def quick() -> dict:
    return quick_run()
