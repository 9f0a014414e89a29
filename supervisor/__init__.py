"""The supervisor (``pynamesrv up``): runs the nodes of cluster.yaml as processes, restarts
them, answers the control endpoint and serves the status page. Never imports ``worker``
or ``state``: it talks to nodes over sockets.

``main`` is the loop, ``child``/``procs``/``policy``/``probe`` one supervised process,
``server``/``commands``/``control_client`` the control endpoint, ``reload`` and
``nodefiles`` the cluster file, ``status_*``, ``broker_rows`` and ``metrics`` the page.
"""
