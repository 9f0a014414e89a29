"""Consistency audit: read every node's tables in rounds, analyse them on Spark, report.

``reader`` reads any NameServer (a pynamesrv node by its snapshot, any other through
RocketMQ's own codes: ``standard_view``) and is the one client of GET_NODE_SNAPSHOT;
``collector`` writes its rounds as ``rows``; ``spark_job`` computes agreement with
DataFrame operations, ``verdict`` decides eventual consistency, ``report`` renders the
results; ``watch`` is the live divergence signal; ``cli`` wires ``pynamesrv audit``.
"""
