"""The node's controller process (``python -m worker.controller``), RocketMQ's
``NamesrvStartup`` and ``NamesrvController``: ``controller`` (``Controller``, ``main``),
``settings``, ``bootstrap`` (the store at start), ``store_home`` (the store across runs),
``zygote`` and ``children`` (forking, watching and restarting workers), ``metrics_book``
(what the workers report) and ``metrics_server`` (``/metrics``, with ``metricsPort`` only).
"""
