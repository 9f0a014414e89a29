"""The ground floor: wire codec, errors, settings schema, cluster.yaml, process helpers.

Imports nothing else of the project; worker, state, supervisor and the tools build on it.
"""
