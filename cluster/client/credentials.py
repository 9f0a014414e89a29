"""ACL credentials of the command-line tools: ``--access-key``/``--secret-key`` or the
environment (``PYNAMESRV_ACCESS_KEY``, ``PYNAMESRV_SECRET_KEY``).

With credentials every request a tool sends is signed (RocketMQ ACL 1.0,
``cluster.core.protocol.acl``). The environment keeps the secret out of ``ps``.
"""

from __future__ import annotations

import argparse
import os

from cluster.core.errors import UserError
from cluster.core.protocol.acl import Credentials

ACCESS_KEY_ENV = "PYNAMESRV_ACCESS_KEY"
SECRET_KEY_ENV = "PYNAMESRV_SECRET_KEY"


def add_credential_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--access-key", metavar="KEY",
                   help=f"sign requests with this ACL access key (default ${ACCESS_KEY_ENV})")
    p.add_argument("--secret-key", metavar="KEY",
                   help=f"the access key's secret (default ${SECRET_KEY_ENV})")
    p.add_argument("--strict-signature", action="store_true",
                   help="also send pynamesrv's StrictSignature, which covers the request code "
                        "and every field name (needed by nodes with aclStrictSignature)")


def credentials_from_args(args: argparse.Namespace) -> Credentials | None:
    """The options' keys, else the environment's; None when neither gives any."""
    access = getattr(args, "access_key", None) or os.environ.get(ACCESS_KEY_ENV) or ""
    secret = getattr(args, "secret_key", None) or os.environ.get(SECRET_KEY_ENV) or ""
    if not access and not secret:
        return None
    if not access or not secret:
        raise UserError(f"an ACL access key needs its secret key and the other way round "
                        f"(--access-key/--secret-key or ${ACCESS_KEY_ENV}/${SECRET_KEY_ENV})")
    return Credentials(access, secret, strict=bool(getattr(args, "strict_signature", False)))
