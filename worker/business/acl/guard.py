"""ACL on the node (RocketMQ ACL 1.0): which requests must be signed, checking, reloading.

With ``aclEnable=true`` every request that changes state must be signed by an
account of the accounts file (``aclFile``, a ``plain_acl.yml``), and the admin
operations by an account with ``admin: true``; with ``aclReadsToo=true`` every
other request must be signed too. The checks follow RocketMQ 4.9's
``PlainPermissionManager.validate``, in its order:

1. a remote address in ``globalWhiteRemoteAddresses`` passes;
2. the ``AccessKey`` extField must be present and name an account;
3. a remote address in that account's ``whiteRemoteAddress`` passes (as in RocketMQ,
   also for admin operations);
4. the ``Signature`` must be the one the account's secret key gives
   (``cluster.core.protocol.acl``), and with ``aclStrictSignature`` the
   ``StrictSignature`` too;
5. an admin operation needs an admin account.

Anything else is refused with NO_PERMISSION and a remark saying what was missing
or wrong (never a secret). The file is re-read when its modification time, size
or inode changed, looked at no more than once a second (at every check, and at every
heartbeat of the business worker, whatever the traffic); a file that cannot be
read or parsed leaves the accounts in force and logs one error per version of
the file. A change takes effect within ``TAKES_EFFECT_S``, for route replies the I/O
workers keep too: with ``aclReadsToo`` a reload moves the store generation, which
empties their caches.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path

from cluster.core.protocol import acl
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from state import nsconfig
from state.store import Store
from worker.business.acl.accounts import Accounts, AclFileError, parse_accounts
from worker.business.acl.addresses import remote_host
from worker.limits import PeerEvents

log = logging.getLogger("pynamesrv.acl")
RQ = RequestCode
RECHECK_S = 1.0  # the file's stamp is looked at no more often than this
# ... so a change is in force everywhere within this: a look at most RECHECK_S after it, on
# the next business worker heartbeat (wire.HEARTBEAT_S), then the caches emptied.
TAKES_EFFECT_S = 2.0


class Need(Enum):
    NOTHING = 0
    SIGNED = 1
    ADMIN = 2


# Broker-side writes: registration, liveness (5.x brokers sign 904 and 322 with the same
# hook as REGISTER_BROKER), topic registration.
SIGNED_CODES = frozenset({RQ.REGISTER_BROKER, RQ.UNREGISTER_BROKER, RQ.BROKER_HEARTBEAT,
                          RQ.QUERY_DATA_VERSION, RQ.REGISTER_TOPIC_IN_NAMESRV})
# Operator writes: mqadmin's verbs that change a NameServer.
ADMIN_CODES = frozenset({RQ.PUT_KV_CONFIG, RQ.DELETE_KV_CONFIG, RQ.UPDATE_NAMESRV_CONFIG,
                         RQ.WIPE_WRITE_PERM_OF_BROKER, RQ.ADD_WRITE_PERM_OF_BROKER,
                         RQ.DELETE_TOPIC_IN_NAMESRV})

Stamp = tuple[int, int, int]


def need(code: int, reads_too: bool) -> Need:
    """What a request of ``code`` must carry."""
    if code in ADMIN_CODES:
        return Need.ADMIN
    if code in SIGNED_CODES or reads_too:
        return Need.SIGNED
    return Need.NOTHING


class AclGuard:
    """The ACL check of one business worker, with its copy of the accounts."""

    def __init__(self, path: Path, reads_too: bool = False,
                 clock: Callable[[], float] = time.monotonic,
                 on_reload: Callable[[], None] | None = None, strict: bool = False) -> None:
        self.path = path
        self.reads_too = reads_too
        self.strict = strict
        self.clock = clock
        self.on_reload = on_reload
        self.accounts = Accounts()
        self.refused = 0
        self.refusals = PeerEvents("acl_refused", "code", log)
        self._stamp: Stamp | None = None
        self._failed: Stamp | None = None
        self._next_check = 0.0
        self.refresh()

    # ------------------------------------------------------------- reload

    def refresh(self) -> None:
        """Re-read the file if it changed; at most one look per ``RECHECK_S``."""
        now = self.clock()
        if now < self._next_check:
            return
        self._next_check = now + RECHECK_S
        self.refusals.summarize(now)
        try:
            st = os.stat(self.path)
        except OSError as exc:
            self._fail((-1, -1, -1), f"cannot read: {exc.strerror or exc}")
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return
        try:
            accounts = parse_accounts(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            self._fail(stamp, f"cannot read: {exc}")
            return
        except AclFileError as exc:
            self._fail(stamp, str(exc))
            return
        first = self._stamp is None
        self.accounts, self._stamp, self._failed = accounts, stamp, None
        log.info("event=acl_loaded file=%s accounts=%d global_white=%d", self.path,
                 len(accounts.by_key), len(accounts.global_white))
        if not first and self.on_reload is not None:
            self.on_reload()

    def _fail(self, stamp: Stamp, problem: str) -> None:
        if stamp == self._failed:
            return
        self._failed = stamp
        log.error("event=acl_file_error file=%s error=%r kept_accounts=%d", self.path,
                  problem, len(self.accounts.by_key))

    # -------------------------------------------------------------- check

    def check(self, cmd: RemotingCommand, peer: str) -> str | None:
        """None when ``cmd`` may run, else the NO_PERMISSION remark."""
        required = need(cmd.code, self.reads_too)
        if required is Need.NOTHING:
            return None
        self.refresh()
        problem = self._problem(cmd, remote_host(peer), required)
        if problem is not None:
            self._refusal(cmd.code, peer, problem)
        return problem

    def unsigned_may_register(self, peer: str) -> bool:
        """Whether a registration from ``peer`` (``host:port``) passes without an AccessKey:
        its address is in ``globalWhiteRemoteAddresses``."""
        self.refresh()
        host = remote_host(peer)
        return bool(host) and self.accounts.whitelisted(host)

    def _problem(self, cmd: RemotingCommand, host: str, required: Need) -> str | None:
        if host and self.accounts.whitelisted(host):
            return None
        access_key = cmd.field(acl.ACCESS_KEY)
        if access_key is None:
            return (f"ACL: request code {cmd.code} needs a signed request: no AccessKey "
                    "extField")
        account = self.accounts.by_key.get(access_key)
        if account is None:
            return f"ACL: no account for AccessKey {access_key}"
        if host and account.white(host):
            return None
        if cmd.field(acl.SIGNATURE) is None:
            return f"ACL: request code {cmd.code} has no Signature extField"
        if not acl.signature_valid(cmd, account.secret_key):
            return f"ACL: check signature failed for AccessKey {access_key}"
        if self.strict and not acl.strict_signature_valid(cmd, account.secret_key):
            return (f"ACL: check StrictSignature failed for AccessKey {access_key} "
                    "(aclStrictSignature: sign with --strict-signature)")
        if required is Need.ADMIN and not account.admin:
            return (f"ACL: request code {cmd.code} needs an admin account; AccessKey "
                    f"{access_key} is not one")
        return None

    def _refusal(self, code: int, peer: str, problem: str) -> None:
        """Counted; logged once per request code and peer address, then summarised."""
        self.refused += 1
        self.refusals.hit(str(code), remote_host(peer) or "-", problem)


def guard_of(store: Store) -> AclGuard | None:
    """The guard the node's settings ask for (``aclEnable``, ``aclFile``, ``aclReadsToo``),
    or None when ACL is off.

    With ``aclReadsToo`` a reload empties the I/O workers' route reply cache (by moving
    the store generation), so a reply learned under a withdrawn account is not served again.
    """
    with store.read() as t:
        if not nsconfig.get_bool(t, "aclEnable"):
            return None
        path = Path(nsconfig.get(t, "aclFile") or "plain_acl.yml")
        reads_too = nsconfig.get_bool(t, "aclReadsToo")
        strict = nsconfig.get_bool(t, "aclStrictSignature")
    return AclGuard(path, reads_too, on_reload=(lambda: _new_generation(store)) if reads_too
                    else None, strict=strict)


def _new_generation(store: Store) -> None:
    with store.write() as t:
        t.route_changed = True
