"""One message through the RocketMQ 5.x proxy with the gRPC client from PyPI.

Usage: ``python -m tests.interop.grpc_roundtrip ENDPOINT TOPIC TIMEOUT_S``. A simple
consumer of a fresh group subscribes, a producer sends one message tagged with this
run, and the consumer receives (and acks) until it sees that message. Prints
``SENT <message id>``, ``RECEIVED <body>`` per message of this run, ``DONE received=0|1``;
exit 0 when the message came back within the timeout.
"""

from __future__ import annotations

import sys
import time

from rocketmq import (  # type: ignore[import-untyped]
    ClientConfiguration,
    Credentials,
    FilterExpression,
    Message,
    Producer,
    SimpleConsumer,
)

INVISIBLE_S = 15
BATCH = 16
# The proxy's shortest long poll (grpcClientConsumerMinLongPollingTimeoutMillis): a receive
# from the broker that does not hold the message returns after this, not the client's
# default 20 s, before the next receive tries the other broker.
AWAIT_S = 5


def main(endpoint: str, topic: str, timeout_s: float) -> int:
    run = f"grpc-{time.time_ns()}"
    config = ClientConfiguration(endpoint, Credentials())
    consumer = SimpleConsumer(config, run, {topic: FilterExpression()}, await_duration=AWAIT_S)
    producer = Producer(config, (topic,))
    consumer.startup()
    producer.startup()
    deadline = time.monotonic() + timeout_s
    got = False
    try:
        message = Message()
        message.topic = topic
        message.body = run.encode()
        print("SENT", producer.send(message).message_id, flush=True)
        while not got and time.monotonic() < deadline:
            try:
                received = consumer.receive(BATCH, INVISIBLE_S)
            except Exception as exc:  # noqa: BLE001 - settings not synced yet: try again
                print("RETRY", type(exc).__name__, str(exc)[:120], flush=True)
                time.sleep(0.5)
                continue
            for msg in received:
                consumer.ack(msg)
                if msg.body == message.body:
                    print("RECEIVED", msg.body.decode(), flush=True)
                    got = True
    finally:
        producer.shutdown()
        consumer.shutdown()
    print(f"DONE received={int(got)}", flush=True)
    return 0 if got else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
