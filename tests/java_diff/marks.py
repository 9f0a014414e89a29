"""The marks every test module of this package carries."""

from __future__ import annotations

import pytest

from tests.javaproc import java_rocketmq_missing

MISSING = java_rocketmq_missing()
JAVA = [pytest.mark.java, pytest.mark.skipif(bool(MISSING), reason=MISSING)]
