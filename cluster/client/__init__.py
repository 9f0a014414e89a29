"""Talking to a NameServer cluster from outside: connections, NameServer client,
broker fan-out, heartbeat, broker simulator and their CLI commands."""
