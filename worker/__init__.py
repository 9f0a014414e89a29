"""One NameServer node at run time: a controller and its I/O and business worker processes,
a folder each (docs/architecture.md, "Inside `worker`").

* ``controller``: RocketMQ's ``NamesrvStartup`` and ``NamesrvController``
  (``python -m worker.controller``);
* ``io``: the I/O workers, RocketMQ's remoting server;
* ``business``: the business workers, RocketMQ's ``DefaultRequestProcessor`` and
  ``ClientRequestProcessor``;
* here, shared by them: ``wire`` (their ZeroMQ messages), ``procs``, ``limits``, ``metrics``,
  ``frame_arena``, ``generation_cache``.

Broker housekeeping (RocketMQ's ``BrokerHousekeepingService``) is ``state.housekeeping``.
"""
