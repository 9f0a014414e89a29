"""Create a node's shared state at start-up: empty route tables, KV and config loaded."""

from __future__ import annotations

from pathlib import Path

from cluster.core.errors import UserError
from state import nsconfig
from state.kvconfig import KVConfigError, load_into
from state.store import Store
from worker.context import STARTED_AT
from worker.settings import NodeSettings

STORE_MAP_SIZE = 1 << 30  # sparse on tmpfs; bounds the route tables of one node


def create_state(path: Path, settings: NodeSettings, now: int) -> Store:
    store = Store.create(path, map_size=STORE_MAP_SIZE)
    try:
        load_into(store, str(settings.kv_config_path))
        _init_config(store, settings)
        with store.write() as t:
            t.put("meta", STARTED_AT, now)
    except KVConfigError as exc:
        store.destroy()
        raise UserError(str(exc)) from None
    return store


def _init_config(store: Store, settings: NodeSettings) -> None:
    nsconfig.initialize(store, settings.config, str(settings.config_store_path),
                        str(settings.kv_config_path), settings.file_keys)
