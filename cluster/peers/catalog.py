"""What is installed, at which pinned version: the one list of the peers and their versions.

Maven Central serves RocketMQ partially: 4.9.8's NameServer and broker jars are not
served (its tools and client are), 5.5.1 has a broker only; each release below is the
newest whose parts all resolve with their dependencies (README "Real RocketMQ peers").
"""

from __future__ import annotations

from dataclasses import dataclass

MAVEN_GROUP = "org.apache.rocketmq"
COMPONENTS = ("namesrv", "broker", "tools", "client", "proxy")
MAIN_CLASS = {
    "namesrv": "org.apache.rocketmq.namesrv.NamesrvStartup",
    "broker": "org.apache.rocketmq.broker.BrokerStartup",
    "tools": "org.apache.rocketmq.tools.command.MQAdminStartup",
    "proxy": "org.apache.rocketmq.proxy.ProxyStartup",
}


@dataclass(frozen=True)
class Release:
    """One RocketMQ release line: the artifact version of each component it has."""

    name: str  # what users and tests call it: "4.9", "5.5", "5.3"
    versions: tuple[tuple[str, str], ...]  # (component, version)
    in_setup: bool  # installed by the test command's setup (else on first use)

    def version(self, component: str) -> str:
        for comp, version in self.versions:
            if comp == component:
                return version
        raise KeyError(f"RocketMQ {self.name} has no {component}")

    def has(self, component: str) -> bool:
        return any(comp == component for comp, _ in self.versions)

    @property
    def components(self) -> tuple[str, ...]:
        return tuple(comp for comp, _ in self.versions)

    @property
    def major(self) -> int:
        return int(self.name.split(".", 1)[0])

    @property
    def label(self) -> str:
        """The versions, e.g. ``namesrv 4.9.7, broker 4.9.7, tools 4.9.8, client 4.9.8``."""
        return ", ".join(f"{comp} {version}" for comp, version in self.versions)


RELEASES: dict[str, Release] = {
    "4.9": Release("4.9", (("namesrv", "4.9.7"), ("broker", "4.9.7"), ("tools", "4.9.8"),
                           ("client", "4.9.8")), in_setup=True),
    "5.5": Release("5.5", tuple((c, "5.5.0") for c in COMPONENTS), in_setup=True),
    "5.3": Release("5.3", tuple((c, "5.3.3") for c in COMPONENTS), in_setup=False),
}
DEFAULT_RELEASE = "5.5"

RUST_CRATE = "rocketmq-namesrv"
RUST_VERSION = "1.0.0"


def release(name: str) -> Release:
    """The release called ``name``; ValueError naming the known ones otherwise."""
    try:
        return RELEASES[name]
    except KeyError:
        raise ValueError(f"unknown RocketMQ release {name!r} (known: "
                         f"{', '.join(RELEASES)})") from None
