"""``pynamesrv chaos run --load``: production load beside the faults: ``plan``, ``gen``
(the load generator), ``reads``, ``stats``, ``checks`` and ``run``.
"""
