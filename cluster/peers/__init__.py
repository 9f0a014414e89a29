"""Real RocketMQ peers, installed from their registries: the Java releases (Maven Central),
the Go client (Go module proxy) and the Rust NameServer (crates.io), and how to run them."""
