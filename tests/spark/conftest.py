"""One quiet local SparkSession for the whole test run; Spark tests carry the ``spark`` marker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from cluster.audit.session import build_session, has_active_session  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    owned = not has_active_session()
    session = build_session("local[2]", "pynamesrv-audit-tests")
    yield session
    if owned:
        session.stop()
