"""The NameServer's state: route tables and KV config in one LMDB store, shared by a node's
processes. Pure functions of a transaction and the time they are given; no sockets.

RocketMQ's ``RouteInfoManager`` is ``route`` (4.9.8's writes), ``route5`` (5.x's) and
``queries`` (reads), its ``BrokerHousekeepingService`` is ``housekeeping``, its
``KVConfigManager`` is ``kvconfig``, ``NamesrvConfig`` is ``nsconfig``. ``store`` is the
LMDB environment (``Store``, ``Txn``), ``applied`` the memo of the topic tables brokers
registered last, ``snapshot`` and ``digest`` the pynamesrv extensions 60001 and 60002,
``restore`` what a node keeps across a restart, ``live`` the live table of either release,
``tableorder`` the Java iteration orders of the tables.
"""
