"""A business worker process: ``process`` (the process), ``processors`` (RocketMQ's
``DefaultRequestProcessor``, one function per request code, 4.9.8's answers),
``processors5`` (5.x's on top), ``route_lookup`` (``ClientRequestProcessor`` and the zone
hook), ``handler_kit``, ``context`` (``NodeContext``), ``failures``, ``acl`` (ACL 1.0).
It talks to the I/O workers over ZeroMQ only and imports nothing of them.
"""
