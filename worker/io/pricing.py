"""What a request is expected to cost the business pool, in microseconds of its time.

The business workers time every request they process and send the time back with
the reply (``wire.pack_replies``); to that the I/O worker adds two microseconds per
KiB of the reply (a large reply is copied on its way: encoded, batched, received,
written), and keeps, per request code, an
estimate that moves half way towards a costlier sample and an eighth of the way
towards a cheaper one, so a code that is sometimes expensive (a topic list after
every route change) stays priced near its expensive runs. A frame's size adds a microsecond per KiB
(a registration's body is decoded and checked). Codes that answer with whole tables
(``HEAVY_CODES``) start at ``HEAVY_PRIOR_US`` until their first reply is seen: they
run alone until measured.

The price is what the fair queues charge a connection (``worker.io.fair_queue``) and
what the credit windows bound in flight (``worker.io.dispatch``).

Pure: time is measured elsewhere and passed in.
"""

from __future__ import annotations

from cluster.core.protocol.codes import RequestCode

RQ = RequestCode
DEFAULT_US = 100  # a code not measured yet
HEAVY_PRIOR_US = 20_000
MAX_CODES = 1024  # codes measured; others keep DEFAULT_US
HEAVY_CODES = frozenset({
    RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, RQ.GET_KVLIST_BY_NAMESPACE,
    RQ.GET_TOPICS_BY_CLUSTER, RQ.GET_BROKER_CLUSTER_INFO, RQ.GET_SYSTEM_TOPIC_LIST_FROM_NS,
    RQ.GET_UNIT_TOPIC_LIST, RQ.GET_HAS_UNIT_SUB_TOPIC_LIST,
    RQ.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, RQ.GET_NAMESRV_CONFIG, RQ.GET_NODE_SNAPSHOT,
    RQ.REGISTER_BROKER,
})


class Prices:
    def __init__(self) -> None:
        self.us: dict[int, int] = {int(code): HEAVY_PRIOR_US for code in HEAVY_CODES}

    def cost(self, code: int, size: int) -> int:
        """Expected microseconds of a request of ``code`` whose frame is ``size`` bytes."""
        return self.us.get(code, DEFAULT_US) + (size >> 10)

    def observe(self, code: int, took_us: int, reply_size: int = 0) -> None:
        """A request of ``code`` took ``took_us`` microseconds in a business worker and was
        answered with ``reply_size`` bytes."""
        took_us += reply_size >> 9
        known = self.us.get(code)
        if known is None:
            if len(self.us) >= MAX_CODES:
                return
            self.us[code] = max(1, took_us)
        elif took_us >= known:
            self.us[code] = known + ((took_us - known + 1) >> 1)
        else:
            self.us[code] = known - ((known - took_us) >> 3)
