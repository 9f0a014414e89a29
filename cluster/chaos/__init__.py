"""Chaos testing: seeded faults against a live local cluster, checked by invariants."""
