"""The marks every test module of this package carries (each release skips on its own,
in the ``java_release`` fixture, when it is not installed). ``differential``: the tests
compare replies, never timings, so the full run gives them the parallel part."""

from __future__ import annotations

import pytest

JAVA = [pytest.mark.java, pytest.mark.differential]
