"""The NameServer address service: the nodes RocketMQ clients and brokers should use."""
