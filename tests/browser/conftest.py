"""Every test here drives Chromium (through ``labserver.py`` and the ``.mjs`` drivers), so
every test here must carry the ``browser`` marker: ``-m "not browser"`` starts none."""

from __future__ import annotations

import pytest


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a test in tests/browser that is not marked ``browser``, before its fixtures run."""
    if item.get_closest_marker("browser") is None:
        pytest.fail(f"{item.nodeid} is in tests/browser but not marked `browser`",
                    pytrace=False)
