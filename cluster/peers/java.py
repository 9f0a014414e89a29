"""Command lines for the real RocketMQ Java peers, run from the cached classpaths.

Each peer gets a run directory of its own: its configuration file, its
``ROCKETMQ_HOME`` (4.x reads its logging setup from ``conf/``), its logs
(``logs/rocketmqlogs``, as ``user.home`` points there) and its store. Every listening
socket is bound to loopback: 5.x gets ``bindAddress=127.0.0.1`` where it has the
setting, and every peer runs with ``bindlo`` preloaded, which turns any wildcard bind
(4.x NameServer, HA ports, the proxy's gRPC port) into a loopback one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cluster.peers import cache, cds, maven, native
from cluster.peers.catalog import MAIN_CLASS, Release

# What the release's own scripts would need on Java 17 and later (4.x reaches into
# java.nio internals to unmap files); harmless where unused.
OPENS = ("java.base/java.lang", "java.base/java.lang.reflect", "java.base/java.nio",
         "java.base/java.util", "java.base/sun.nio.ch", "java.base/jdk.internal.misc")
LOGBACK_4 = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/rocketmqlogs/{name}.log</file>
    <encoder><pattern>%d{{yyyy-MM-dd HH:mm:ss.SSS}} %p %t - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""
# conf/tools.yml of a RocketMQ release: the admin account mqadmin signs with.
TOOLS_YML = "accessKey: rocketmq2\nsecretKey: 12345678\n"


class PeerMissing(Exception):
    """A component is not installed; ``str()`` says why and how to install it."""


@dataclass
class PeerCommand:
    """One JVM to start: ``argv`` in ``cwd`` with ``env`` added to the environment."""

    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    log: Path | None = None  # the peer's main log file, once it runs

    def environ(self) -> dict[str, str]:
        return {**os.environ, **self.env}


def java_binary() -> str:
    """``$JAVA``, else ``$JAVA_HOME/bin/java``, else ``java`` on the PATH."""
    explicit = os.environ.get("JAVA")
    if explicit:
        return explicit
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise PeerMissing("no java on the PATH (Java 17 or newer is needed)")
    return found


def missing(release: Release, component: str | None = None) -> str:
    """Why ``component`` (default: all of the release's) cannot run here, or ""."""
    for comp in (component,) if component else release.components:
        if maven.installed(release, comp) is None:
            why = cache.unavailable_reason("java")
            return why or (f"RocketMQ {release.name} {comp} is not installed "
                           f"(pynamesrv peer install --java)")
    try:
        java_binary()
    except PeerMissing as exc:
        return str(exc)
    return ""


def classpath(release: Release, component: str, *extra: Path) -> str:
    jars = maven.installed(release, component)
    if jars is None:
        raise PeerMissing(missing(release, component))
    return os.pathsep.join([*map(str, extra), *map(str, jars)])


# What RocketMQ's bin/runserver.sh (4.9 and 5.x alike) gives the NameServer on Java 9 and
# later, heap aside (the script's is 4g): ``gc="script"``.
SCRIPT_GC = ("-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
             "-XX:InitiatingHeapOccupancyPercent=30", "-XX:SoftRefLRUPolicyMSPerMB=0",
             "-XX:MetaspaceSize=128m", "-XX:MaxMetaspaceSize=320m")


def jvm_options(heap: str, gc: str = "serial") -> list[str]:
    """Heap, collector and the module openings every peer JVM gets, then
    ``$JAVA_OPT_EXT`` (as RocketMQ's own scripts take it). ``gc``: "serial", "g1" or
    "script" (the collector settings of RocketMQ's own start script)."""
    collector = {"serial": ["-XX:+UseSerialGC"], "g1": ["-XX:+UseG1GC"],
                 "script": list(SCRIPT_GC)}[gc]
    opens = [f"--add-opens={module}=ALL-UNNAMED" for module in OPENS]
    return [f"-Xms{heap}", f"-Xmx{heap}", *collector, "-XX:-OmitStackTraceInFastThrow",
            "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED", *opens,
            *os.environ.get("JAVA_OPT_EXT", "").split()]


def _run_env(home: Path) -> dict[str, str]:
    return {"ROCKETMQ_HOME": str(home), "LD_PRELOAD": str(native.bindlo())}


def prepare_home(home: Path, release: Release, *, tools_yml: bool = False) -> Path:
    """``home`` as a ROCKETMQ_HOME: 4.x logging files, optionally the tools' keys."""
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    if release.major == 4:
        for name in ("namesrv", "broker", "tools"):
            (conf / f"logback_{name}.xml").write_text(LOGBACK_4.format(name=name))
    if tools_yml:
        (conf / "tools.yml").write_text(TOOLS_YML)
    return home


def _properties(path: Path, values: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


def _homes(workdir: Path) -> list[str]:
    """The JVM's home, RocketMQ's and the JVM's temporary files in ``workdir`` (``tmp``): a
    5.x broker's self-signed TLS certificate and the RocksDB library it unpacks (12 MB),
    mqadmin's static-topic dumps. A peer that is killed leaves them there, not in the
    machine's temporary directory."""
    tmp = workdir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return [f"-Duser.home={workdir}", f"-Drocketmq.home.dir={workdir}",
            f"-Djava.io.tmpdir={tmp}"]


def _jvm(release: Release, component: str, workdir: Path, heap: str, gc: str,
         extra: Sequence[str] = ()) -> list[str]:
    return [java_binary(), *jvm_options(heap, gc), *extra, *_homes(workdir),
            "-cp", classpath(release, component), MAIN_CLASS[component]]


def namesrv(release: Release, port: int, workdir: Path, heap: str = "256m",
            props: dict[str, str] | None = None, gc: str = "serial") -> PeerCommand:
    """The NameServer on 127.0.0.1:``port``, its files in ``workdir``."""
    prepare_home(workdir, release)
    values = {"listenPort": str(port), "rocketmqHome": str(workdir),
              "kvConfigPath": str(workdir / "kvConfig.json"),
              "configStorePath": str(workdir / "namesrv.properties")}
    if release.major >= 5:
        values["bindAddress"] = "127.0.0.1"
    config = _properties(workdir / "namesrv.properties", {**values, **(props or {})})
    argv = [*_jvm(release, "namesrv", workdir, heap, gc), "-c", str(config)]
    return PeerCommand(argv, workdir, _run_env(workdir),
                       workdir / "logs" / "rocketmqlogs" / "namesrv.log")


def broker(release: Release, namesrv_addr: str, workdir: Path, name: str, cluster: str,
           broker_id: int, port: int, heap: str = "512m",
           settings: dict[str, str] | None = None,
           jvm_extra: Sequence[str] = ()) -> PeerCommand:
    """A broker (id 0: master, else slave) on ``port``; fast port ``port``-2, HA ``port``+1."""
    prepare_home(workdir, release)
    store = workdir / "store"
    values = {"brokerClusterName": cluster, "brokerName": name, "brokerId": str(broker_id),
              "brokerRole": "ASYNC_MASTER" if broker_id == 0 else "SLAVE",
              "listenPort": str(port), "haListenPort": str(port + 1),
              "brokerIP1": "127.0.0.1", "brokerIP2": "127.0.0.1",
              "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
              "mappedFileSizeCommitLog": str(64 << 20), "autoCreateTopicEnable": "true",
              "deleteWhen": "04", "fileReservedTime": "1"}
    if namesrv_addr:
        values["namesrvAddr"] = namesrv_addr
    if release.major >= 5:
        values["bindAddress"] = "127.0.0.1"
    config = _properties(workdir / "broker.conf", {**values, **(settings or {})})
    argv = [*_jvm(release, "broker", workdir, heap, "serial", jvm_extra), "-c", str(config)]
    return PeerCommand(argv, workdir, _run_env(workdir),
                       workdir / "logs" / "rocketmqlogs" / "broker.log")


def mqadmin(release: Release, home: Path, args: Sequence[str], heap: str = "256m",
            tools_yml: bool = True, jvm_extra: Sequence[str] = ()) -> PeerCommand:
    """``mqadmin ARGS`` as a release runs it (signing with conf/tools.yml unless told not)."""
    prepare_home(home, release, tools_yml=tools_yml)
    env = _run_env(home)
    jvm = _jvm(release, "tools", home, heap, "serial", ["-XX:TieredStopAtLevel=1", *jvm_extra])
    archive = cds.archive_path(jvm[0], classpath(release, "tools"), f"tools-{release.name}")
    shared = cds.options(jvm, archive, ["clusterList", "-n", "{closed}"], env)
    return PeerCommand([jvm[0], *shared, *jvm[1:], *args], home, env)


def proxy(release: Release, workdir: Path, namesrv_addr: str, cluster: str, grpc_port: int,
          remoting_port: int, heap: str = "512m",
          config: dict[str, object] | None = None) -> PeerCommand:
    """The 5.x proxy in cluster mode: gRPC on ``grpc_port``, remoting on ``remoting_port``."""
    if not release.has("proxy"):
        raise PeerMissing(f"RocketMQ {release.name} has no proxy")
    prepare_home(workdir, release)
    values: dict[str, object] = {
        "rocketMQClusterName": cluster, "namesrvAddr": namesrv_addr,
        "grpcServerPort": grpc_port, "remotingListenPort": remoting_port,
        "localServeAddr": "127.0.0.1", "proxyMode": "cluster", **(config or {})}
    path = workdir / "conf" / "rmq-proxy.json"
    path.write_text(json.dumps(values, indent=1))
    argv = [*_jvm(release, "proxy", workdir, heap, "serial",
                  [f"-Dcom.rocketmq.proxy.configPath={path}"]), "-pm", "cluster"]
    return PeerCommand(argv, workdir, {**_run_env(workdir), "RMQ_PROXY_HOME": str(workdir)},
                       workdir / "logs" / "rocketmqlogs" / "proxy.log")


def client_program(release: Release, main_class: str, class_dir: Path, home: Path,
                   args: Sequence[str], heap: str = "256m") -> PeerCommand:
    """A program compiled against the release's client and admin jars (``javac_argv``)."""
    argv = [java_binary(), *jvm_options(heap), "-XX:TieredStopAtLevel=1", *_homes(home),
            "-cp", classpath(release, "tools", class_dir), main_class, *args]
    return PeerCommand(argv, home)


def javac_argv(release: Release, sources: Sequence[Path], out_dir: Path) -> list[str]:
    javac = shutil.which("javac")
    if javac is None:
        raise PeerMissing("no javac on the PATH (a JDK 17 or newer is needed)")
    return [javac, "-encoding", "UTF-8", "-d", str(out_dir), "-cp",
            classpath(release, "tools"), *map(str, sources)]
