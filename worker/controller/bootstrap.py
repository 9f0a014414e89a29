"""A node's shared state at start-up: the store its data dir's previous run left (route
tables kept, `state.restore`) or an empty one; KV and config loaded from their files;
brokers past their expiry bound removed before anything is served."""

from __future__ import annotations

import logging
from pathlib import Path

from cluster.core.errors import UserError
from cluster.core.protocol.dialect import dialect_of
from state import housekeeping, nsconfig
from state.kvconfig import KVConfigError, load_into
from state.restore import Restored, restore_routes
from state.store import Store
from worker.business.context import STARTED_AT
from worker.controller.settings import NodeSettings

STORE_MAP_SIZE = 1 << 30  # sparse on tmpfs; bounds the route tables of one node
ARENA_GLOB = "frames-*"  # the I/O workers' large-frame files (worker.frame_arena)
log = logging.getLogger("pynamesrv.node")


def open_state(path: Path, settings: NodeSettings, now: int) -> Store:
    """The node's store at ``path``: reopened with its routes when a previous run left one
    (at wall time ``now``, ms), else created empty."""
    store = Store.reopen(path)
    restored = None
    if store is None:
        store = Store.create(path, map_size=STORE_MAP_SIZE)
    else:
        restored = restore_routes(
            store, dialect_of(settings.config.get("rocketmqVersion")).five)
        for old in path.glob(ARENA_GLOB):
            old.unlink(missing_ok=True)
    try:
        load_into(store, str(settings.kv_config_path))
        _init_config(store, settings)
        with store.write() as t:
            t.put("meta", STARTED_AT, now)
    except KVConfigError as exc:
        store.close()
        raise UserError(str(exc)) from None
    if restored is not None:
        _log_restored(store, restored, now)
    return store


def _log_restored(store: Store, restored: Restored, now: int) -> None:
    with store.read() as t:
        expiry = nsconfig.get_int(t, "brokerChannelExpiredTime")
        five = nsconfig.dialect(t).five
    expired = housekeeping.scan_not_active(store, now, expiry, five)
    age = "none" if restored.newest_heartbeat is None else \
        f"{(now - restored.newest_heartbeat) / 1000:.1f}"
    log.warning("event=routes_restored brokers=%d topics=%d expired=%d newest_heartbeat_age_s=%s",
                restored.brokers, restored.topics, expired, age)


def _init_config(store: Store, settings: NodeSettings) -> None:
    nsconfig.initialize(store, settings.config, str(settings.config_store_path),
                        str(settings.kv_config_path), settings.file_keys)
    problem = nsconfig.oversized(settings.config)
    if problem is not None:  # written by an older version: served, and shrinkable by an update
        log.warning("event=config_oversized file=%s %s", settings.config_store_path, problem)
