"""What build of pynamesrv this is, for ``pynamesrv_build_info`` (node and supervisor)."""

from __future__ import annotations

import platform
from functools import cache
from importlib import metadata

BUILD_INFO_NAME = "pynamesrv_build_info"
BUILD_INFO_HELP = ("1, labelled with the pynamesrv version, the Python it runs on and the "
                   "RocketMQ release whose semantics it follows")
ROCKETMQ_BASELINE = "4.9.8"


@cache
def build_labels() -> dict[str, str]:
    try:
        version = metadata.version("pynamesrv")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"version": version, "python": platform.python_version(),
            "rocketmq": ROCKETMQ_BASELINE}
