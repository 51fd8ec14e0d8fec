"""Fixtures for tests/protocol/collections (helpers live in ``widgets_support.py``)."""

from __future__ import annotations

import pytest
from widgets_support import WHarness, wharness


@pytest.fixture
def w() -> WHarness:
    return wharness()
