"""``pynamesrv bench``: the node against the Java and Rust NameServers and a Python baseline
(``runner``, ``workloads``, ``compare``, ``sampler``), and the fan-out, audit and
divergence-signal benchmarks. BENCHMARKS.md has the figures."""
