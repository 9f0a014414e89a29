"""Consistency audit: collect node snapshots, analyse them on Spark, report.

``rows`` defines the row schema and flattens a snapshot, ``collector`` polls a
cluster, ``spark_job`` computes agreement with DataFrame operations,
``verdict`` decides eventual consistency, ``report`` renders the results and
``cli`` wires the ``pynamesrv audit`` subcommands.
"""
