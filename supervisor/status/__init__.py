"""The supervisor's status page: ``gather`` (reading the nodes), ``history``, ``keys``
(the differing entries), ``board`` and ``view`` (what is shown), ``page`` and ``templates``
(the HTML).
"""
