"""TLS on a node's listen port, as RocketMQ's ``tls.server.*`` settings describe it.

``disabled``: plain TCP only. ``permissive``: each connection is told apart by its
first byte (a TLS handshake record starts with 0x16; a remoting frame's length
never does for frames under 352 MiB), so TLS and plain clients share the port.
``enforcing``: a connection that does not start a TLS handshake is closed.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from cluster.errors import ConfigError

DISABLED, PERMISSIVE, ENFORCING = "disabled", "permissive", "enforcing"
HANDSHAKE = 0x16  # TLS record type of a ClientHello
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL,
                "require": ssl.CERT_REQUIRED}


def resolve(path: str, data_dir: Path) -> str:
    """A setting's path, relative ones against the node's data dir; "" stays ""."""
    return str(data_dir / path) if path else ""


def server_context(cert: str, key: str, client_auth: str, trust: str) -> ssl.SSLContext:
    """The node's TLS context; ConfigError naming the setting when a file is missing or bad."""
    if not cert or not key:
        raise ConfigError("tls.server.certPath and tls.server.keyPath are needed when "
                          "tls.server.mode is not disabled")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"tls.server.certPath/keyPath ({cert}, {key}): {exc}") from None
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    if ctx.verify_mode != ssl.CERT_NONE:
        if not trust:
            raise ConfigError("tls.server.trustCertPath is needed when "
                              "tls.server.need.client.auth is not none")
        try:
            ctx.load_verify_locations(trust)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"tls.server.trustCertPath ({trust}): {exc}") from None
    return ctx
