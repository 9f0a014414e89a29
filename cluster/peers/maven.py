"""Resolve a RocketMQ component and its dependencies from Maven Central into the cache.

Maven does the work (``dependency:build-classpath`` on a one-dependency POM, with the
cache's own local repository); what is kept is the classpath: one file per release and
component listing the jars in resolution order.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from cluster.peers import cache
from cluster.peers.catalog import MAVEN_GROUP, Release

MVN_TIMEOUT_S = 1800.0
# What Maven prints when it could not talk to the registry at all (as opposed to the
# registry answering that it does not serve an artifact).
UNREACHABLE = re.compile(
    r"UnknownHostException|Connection refused|connect timed out|Connect to \S+ failed|"
    r"Network is unreachable|No route to host|Temporary failure in name resolution|"
    r"Read timed out|Could not transfer artifact")

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>pynamesrv.peers</groupId>
  <artifactId>{component}</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>rocketmq-{component}</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""


class RegistryUnreachable(Exception):
    """The registry did not answer (no network, no DNS): nothing can be installed."""


class ResolveFailed(Exception):
    """The registry answered, and the component could not be resolved."""


def installed(release: Release, component: str) -> list[Path] | None:
    """The component's jars when its classpath file exists and every jar is present."""
    try:
        text = cache.classpath_file(release.name, component).read_text().strip()
    except OSError:
        return None
    jars = [Path(p) for p in text.split(os.pathsep) if p]
    return jars if jars and all(j.is_file() for j in jars) else None


def resolve(release: Release, component: str) -> list[Path]:
    """Download the component with its dependencies; record and return its classpath."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ResolveFailed("Maven (mvn) is not installed")
    version = release.version(component)
    with tempfile.TemporaryDirectory(prefix="pynamesrv-mvn-") as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(POM.format(group=MAVEN_GROUP, component=component,
                                                 version=version))
        out = work / "classpath.txt"
        argv = [mvn, "-B", "-q", f"-Dmaven.repo.local={cache.maven_repo()}",
                "dependency:build-classpath", f"-Dmdep.outputFile={out}",
                f"-Dmdep.pathSeparator={os.pathsep}"]
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True,
                              timeout=MVN_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not out.is_file():
            _raise_failure(f"rocketmq-{component} {version}", done.stdout + done.stderr)
        classpath = out.read_text().strip()
    cache.write_atomic(cache.classpath_file(release.name, component), classpath + "\n")
    jars = installed(release, component)
    if jars is None:
        raise ResolveFailed(f"rocketmq-{component} {version}: Maven listed jars it did not "
                            f"download: {classpath[:300]}")
    return jars


def _raise_failure(what: str, output: str) -> None:
    errors = [line.removeprefix("[ERROR] ").strip() for line in output.splitlines()
              if line.startswith("[ERROR]") and line.strip() != "[ERROR]"]
    first = errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1]
    if UNREACHABLE.search(output) and "Could not find artifact" not in output:
        raise RegistryUnreachable(f"{what}: Maven Central did not answer: {first[:300]}")
    raise ResolveFailed(f"{what}: {first[:500]}")
