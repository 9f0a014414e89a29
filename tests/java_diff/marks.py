"""The marks every test module of this package carries (each release skips on its own,
in the ``java_release`` fixture, when it is not installed)."""

from __future__ import annotations

import pytest

JAVA = [pytest.mark.java]
