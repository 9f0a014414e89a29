"""A module planted in a node's working directory or data dir never runs.

``python -m`` puts the working directory first on the module path; nodes are started
with ``-P`` instead (``cluster.core.procs.python_module``), which their worker processes
inherit. The supervised case is in tests/integration/test_supervised_attacks.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.nodeproc import Conn, ShellStartedNode

pytestmark = pytest.mark.integration

# Modules a node imports (directly or in its workers), and project package names.
PLANTED = ("lmdb", "zmq", "uvloop", "orjson", "yaml", "psutil", "state")


def plant(directory: Path, marker: Path) -> None:
    """Modules that leave a line in ``marker`` if they are ever imported, then fail."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in PLANTED:
        (directory / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write('{name} ran\\n')\n"
            f"raise ImportError('planted {name}')\n")


def test_modules_planted_in_the_cwd_and_data_dir_do_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "planted-ran.txt"
    cwd, data = tmp_path / "cwd", tmp_path / "data"
    plant(cwd, marker)
    plant(data, marker)
    node = ShellStartedNode(data, None, cwd=cwd).start()
    try:
        conn = Conn(node.addr)
        reply = conn.call(RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, version=409))
        conn.close()
        assert reply.code == ResponseCode.SUCCESS
    finally:
        node.stop()
    assert not marker.exists(), marker.read_text()
