"""An I/O worker process, RocketMQ's remoting server: ``process`` (the process), ``hub``
(``Hub``: connections, frames, the ZeroMQ router), ``connection``, ``sources`` (the port, TLS
or a hand-off), ``proxy_protocol``, ``handoff`` (large frames to their own worker),
``dispatch``, ``fair_queue`` and ``pricing`` (who gets the business pool next),
``route_replies`` (route lookups answered from encoded replies), ``go_away``, ``tls``.
It talks to the business workers over ZeroMQ only and imports nothing of them.
"""
