"""One NameServer node at run time: a controller and its I/O and business worker processes.

* controller (RocketMQ's ``NamesrvController``): ``node`` (``python -m worker.node``),
  ``children``, ``bootstrap``, ``store_home``, ``settings``, ``metrics_server``;
* I/O workers (the remoting server): ``io_process``, ``io_worker`` (``Hub``),
  ``io_connection``, ``io_sources``, ``tls``, ``handoff``, ``frame_arena``, ``dispatch``,
  ``fair_queue``, ``pricing``, ``route_replies``;
* business workers (``DefaultRequestProcessor``): ``business``, ``processors``,
  ``context``, ``failures``, ``acl`` (with ``acl_accounts`` and ``acl_addresses``);
* shared by them: ``wire`` (their ZeroMQ messages), ``procs``, ``limits``, ``metrics``,
  ``generation_cache``.

docs/architecture.md ("Inside one node") has the messages between them.
"""
