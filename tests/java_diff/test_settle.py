"""An unregistration settles only once its effects show, on a release that applies it later
(no Java needed: a side whose replies are scripted)."""

from __future__ import annotations

from cluster.core.protocol.codes import RequestCode, ResponseCode, SerializeType
from cluster.core.protocol.command import RemotingCommand
from tests.java_diff.scenarios import unregister_step
from tests.java_diff.sides import Outcome, Side, Step

EMPTY = b'{"brokerAddrTable":{"b":{"brokerAddrs":{},"brokerName":"b","cluster":"C"}},' \
        b'"clusterAddrTable":{"C":["b"]}}'
GONE = b'{"brokerAddrTable":{},"clusterAddrTable":{}}'


class Lagging(Side):
    """5.x queuing an unregistration of a broker that never had a live entry: the live
    table answers "gone" at once, the empty broker name goes on the third cluster info."""

    def __init__(self) -> None:
        super().__init__("lagging", "127.0.0.1:1")
        self.polls: list[int] = []

    def run(self, step: Step) -> Outcome:
        assert step.cmd is not None
        self.polls.append(step.cmd.code)
        reply = RemotingCommand(code=ResponseCode.SUCCESS, opaque=step.cmd.opaque, flag=1)
        if step.cmd.code == RequestCode.GET_BROKER_CLUSTER_INFO:
            seen = self.polls.count(RequestCode.GET_BROKER_CLUSTER_INFO)
            reply.body = EMPTY if seen < 3 else GONE
        return Outcome("reply", reply)


def test_an_unregistration_settles_once_the_empty_broker_name_went() -> None:
    side = Lagging()
    step = unregister_step("master leaves", "C", "b", "10.0.0.1:10911", 0, SerializeType.JSON)
    side.settle(step)
    assert side.polls == [RequestCode.QUERY_DATA_VERSION] + \
        [RequestCode.GET_BROKER_CLUSTER_INFO] * 3
