"""Two floors under one name: ``cluster.core``, the ground floor every package builds on
(wire codec, settings schema, cluster.yaml, process helpers), and the tools that talk to a
cluster from outside (``client``, ``audit``, ``chaos``, ``bench``, ``addr``, ``peers``,
``cli``). docs/architecture.md has which may import which.
"""
