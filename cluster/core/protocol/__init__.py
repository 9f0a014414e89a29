"""RocketMQ's remoting protocol, pure (no I/O): ``frame`` and ``command`` (frames and
``RemotingCommand``), ``peek`` (a header's fields without decoding it), ``codes``, the
bodies (``register_body``, ``register_scan``, ``table_memo``, ``route_bodies``, ``admin_bodies``,
``digest_body``, ``body_common``), fastjson's text (``fastjson``, ``lenient``), Java
properties (``properties``) and ACL signatures (``acl``)."""
