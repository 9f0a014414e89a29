"""The peer installation's pure parts: versions, cache layout, failure classification,
command lines, without a registry or a JVM."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cluster.peers import cache, cds, install, java, maven
from cluster.peers.catalog import RELEASES, release


@pytest.fixture
def peers_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PYNAMESRV_PEERS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(java.native, "bindlo", lambda: tmp_path / "bindlo.so")
    return tmp_path / "cache"


def fake_install(rel: str, component: str, root: Path) -> list[Path]:
    jars = [root / "m2" / f"{component}-{i}.jar" for i in range(3)]
    for jar in jars:
        jar.parent.mkdir(parents=True, exist_ok=True)
        jar.write_bytes(b"PK")
    cache.write_atomic(cache.classpath_file(rel, component), ":".join(map(str, jars)) + "\n")
    return jars


def test_releases_pin_every_component_and_say_what_is_served() -> None:
    four, five = release("4.9"), release("5.5")
    assert four.version("namesrv") == "4.9.7" and four.version("tools") == "4.9.8"
    assert not four.has("proxy") and five.has("proxy")
    assert {v for _, v in five.versions} == {"5.5.0"} and five.major == 5
    assert [r.name for r in RELEASES.values() if r.in_setup] == ["4.9", "5.5"]
    with pytest.raises(ValueError, match="known: 4.9, 5.5, 5.3"):
        release("6.0")


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    monkeypatch.delenv("PYNAMESRV_PEERS_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.root() == tmp_path / "pynamesrv" / "peers"
    monkeypatch.setenv("PYNAMESRV_PEERS_CACHE", str(tmp_path / "x"))
    assert cache.classpath_file("5.5", "broker") == tmp_path / "x" / "java" / "5.5" / \
        "broker.classpath"


def test_installed_needs_every_jar(peers_cache: Path) -> None:
    rel = release("5.5")
    assert maven.installed(rel, "namesrv") is None
    jars = fake_install("5.5", "namesrv", peers_cache)
    assert maven.installed(rel, "namesrv") == jars
    jars[1].unlink()
    assert maven.installed(rel, "namesrv") is None


@pytest.mark.parametrize(("output", "unreachable"), [
    ("[ERROR] Failed to execute goal on project namesrv: Could not resolve dependencies: "
     "Could not transfer artifact org.apache.rocketmq:rocketmq-namesrv:pom:5.5.0 from/to central"
     " (https://repo.maven.apache.org/maven2): java.net.UnknownHostException: "
     "repo.maven.apache.org", True),
    ("[ERROR] Failed to execute goal: Could not find artifact "
     "org.apache.rocketmq:rocketmq-namesrv:jar:4.9.8 in central", False),
    ("[ERROR] Plugin org.apache.maven.plugins:maven-dependency-plugin:2.8 could not be "
     "resolved: Connect to repo.maven.apache.org:443 failed: Connection refused", True),
])
def test_maven_failures_are_told_apart(output: str, unreachable: bool) -> None:
    expected = maven.RegistryUnreachable if unreachable else maven.ResolveFailed
    with pytest.raises(expected) as info:
        maven._raise_failure("rocketmq-namesrv 5.5.0", output)
    assert str(info.value).startswith("rocketmq-namesrv 5.5.0: ")
    assert "\n" not in str(info.value)


def test_an_unreachable_registry_is_recorded_and_not_a_failure(peers_cache: Path) -> None:
    def offline() -> None:
        raise install.Unreachable("Maven Central did not answer: UnknownHostException")

    def broken() -> None:
        raise maven.ResolveFailed("rocketmq-broker 5.5.0: Could not find artifact")

    assert install._part("java", offline)
    reason = cache.unavailable_reason("java")
    assert "UnknownHostException" in reason
    assert java.missing(release("5.5")) == reason  # what the skipped tests print
    assert not install._part("java", broken)
    assert install._part("java", lambda: None)
    assert cache.unavailable_reason("java") == ""
    assert "pynamesrv peer install --java" in java.missing(release("5.5"))


def test_nothing_requested_means_what_the_tests_use(monkeypatch: pytest.MonkeyPatch,
                                                    peers_cache: Path) -> None:
    asked: list[object] = []
    monkeypatch.setattr(install, "install_java", lambda rels: asked.append([r.name for r in rels]))
    monkeypatch.setattr(install, "install_go", lambda: asked.append("go"))
    monkeypatch.setattr(install, "install_rust", lambda: asked.append("rust"))
    args = argparse.Namespace(java=False, go=False, rust=False, release=None)
    assert install.run(args) == 0
    assert asked == [["4.9", "5.5"], "go"]


def test_namesrv_command_binds_loopback_and_keeps_its_files(peers_cache: Path,
                                                            tmp_path: Path) -> None:
    for rel in ("4.9", "5.5"):
        fake_install(rel, "namesrv", peers_cache)
        work = tmp_path / f"ns-{rel}"
        cmd = java.namesrv(release(rel), 19876, work, heap="128m", props={"extra": "1"})
        props = (work / "namesrv.properties").read_text().splitlines()
        assert props[0] == "listenPort=19876" and props[-1] == "extra=1"
        assert ("bindAddress=127.0.0.1" in props) == (rel == "5.5")
        assert cmd.argv[-2:] == ["-c", str(work / "namesrv.properties")]
        assert "-Xmx128m" in cmd.argv and f"-Duser.home={work}" in cmd.argv
        assert f"-Djava.io.tmpdir={work / 'tmp'}" in cmd.argv and (work / "tmp").is_dir()
        assert cmd.env["ROCKETMQ_HOME"] == str(work)
        assert cmd.env["LD_PRELOAD"] == str(tmp_path / "bindlo.so")
        assert (work / "conf" / "logback_namesrv.xml").exists() == (rel == "4.9")


def test_broker_command_master_and_slave(peers_cache: Path, tmp_path: Path) -> None:
    fake_install("5.5", "broker", peers_cache)
    java.broker(release("5.5"), "127.0.0.1:1;127.0.0.1:2", tmp_path / "s", "b", "C", 1, 20911,
                settings={"enableSlaveActingMaster": "true"})
    conf = dict(line.split("=", 1) for line in
                (tmp_path / "s" / "broker.conf").read_text().splitlines())
    assert conf["brokerRole"] == "SLAVE" and conf["brokerId"] == "1"
    assert conf["haListenPort"] == "20912" and conf["namesrvAddr"] == "127.0.0.1:1;127.0.0.1:2"
    assert conf["enableSlaveActingMaster"] == "true" and conf["bindAddress"] == "127.0.0.1"


def test_a_missing_component_names_the_install_command(peers_cache: Path,
                                                       tmp_path: Path) -> None:
    with pytest.raises(java.PeerMissing, match="pynamesrv peer install --java"):
        java.namesrv(release("5.5"), 1, tmp_path)
    with pytest.raises(java.PeerMissing, match="has no proxy"):
        java.proxy(release("4.9"), tmp_path, "x:1", "C", 1, 2)


def fake_java(tmp_path: Path, makes_archive: bool) -> Path:
    """A 'java' that records its runs and, if told, writes the -XX:ArchiveClassesAtExit file."""
    script = tmp_path / "java"
    write = ('for a in "$@"; do case "$a" in -XX:ArchiveClassesAtExit=*) '
             'printf x > "${a#*=}";; esac; done\n') if makes_archive else ""
    script.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "runs"}\n{write}')
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("makes_archive", [True, False])
def test_mqadmin_class_archive_is_made_once(peers_cache: Path, tmp_path: Path,
                                            makes_archive: bool) -> None:
    java_bin = fake_java(tmp_path, makes_archive)
    jar = tmp_path / "tools.jar"
    jar.write_bytes(b"PK")
    archive = cds.archive_path(str(java_bin), str(jar), "tools-x")
    assert archive.parent == peers_cache / "cds" and archive.name.startswith("tools-x-")
    jvm = [str(java_bin), "-cp", str(jar), "Main"]
    expected = [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto"] if makes_archive else []
    for _ in range(2):  # the second run finds the archive (or the failed training's marker)
        assert cds.options(jvm, archive, ["clusterList", "-n", "{closed}"], {}) == expected
    runs = (tmp_path / "runs").read_text().splitlines()
    assert len(runs) == 1 and runs[0].startswith("-XX:ArchiveClassesAtExit=")
    assert runs[0].split()[1:4] == ["-cp", str(jar), "Main"]
    assert "{closed}" not in runs[0] and runs[0].split()[-2:][0] == "-n"
    jar.write_bytes(b"PK2")  # new jars: a new archive
    assert cds.archive_path(str(java_bin), str(jar), "tools-x") != archive
