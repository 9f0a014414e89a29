#!/usr/bin/env bash
# Prepare a checkout: .venv with pynamesrv and its dev + spark + interop + bench extras, Java 17 for
# PySpark, Debian's chromium for the page tests (PYNAMESRV_NO_BROWSER=1 skips it) and
# Debian's prometheus for promtool and the dashboard check (PYNAMESRV_NO_PROMETHEUS=1 skips it).
# With --peers (what scripts/test.sh passes): also the real RocketMQ peers the tests use,
# from their registries into a cache outside the clone (pynamesrv peer install --java --go:
# Apache RocketMQ 4.9 and 5.x from Maven Central, the Go client probe from the Go module
# proxy), with Maven and Go from Debian when missing.
# Safe to run again: it only installs what is missing or changed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
STAMP="$VENV/.pynamesrv-install"

say() { printf 'setup: %s\n' "$*" >&2; }

find_python() {
  for cand in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$cand"
      return 0
    fi
  done
  return 1
}

make_venv() {
  if [ -x "$PY" ] && "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    return 0
  fi
  local base
  base="$(find_python)" || { say "Python 3.11 or newer is required (set PYTHON=...)"; exit 1; }
  say "creating $VENV with $base"
  "$base" -m venv "$VENV"
}

install_package() {
  local want
  want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/pynamesrv" ] &&
     "$PY" -c 'import zmq, lmdb, uvloop, yaml, psutil, pyspark, pytest, xdist, rocketmq, matplotlib' 2>/dev/null; then
    return 0
  fi
  say "installing pynamesrv and its dependencies into $VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check -e '.[dev,spark,interop,bench]'
  echo "$want" > "$STAMP"
}

java_major() {
  java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1
}

install_java() {
  if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then
    return 0
  fi
  if ls -d /usr/lib/jvm/java-17-openjdk-* >/dev/null 2>&1; then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      say "Java 17 is missing; install openjdk-17-jre-headless (PySpark needs it)"; exit 1; }
    sudo="sudo"
  fi
  say "installing Java 17 (openjdk-17-jre-headless) for PySpark"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jre-headless >/dev/null
}

install_browser() {
  # Headless Chromium for the page tests (tests/browser.py), which skip without one.
  [ -z "${PYNAMESRV_NO_BROWSER:-}" ] || return 0
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo -n"
  fi
  say "installing Debian's chromium for the page tests"
  if ! { $sudo apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null; }; then
    say "could not install chromium; the page tests will skip"
  fi
}

install_prometheus() {
  # promtool checks the shipped alert rules, the Prometheus server the Grafana dashboard's
  # queries (tests/unit/test_monitoring.py, tests/integration/test_supervisor_metrics.py);
  # both skip without them. Debian's package, the server not started.
  [ -z "${PYNAMESRV_NO_PROMETHEUS:-}" ] || return 0
  if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo -n"
  fi
  say "installing Debian's prometheus (promtool) for the monitoring checks"
  if ! { $sudo apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
           prometheus >/dev/null; }; then
    say "could not install prometheus; the monitoring checks will skip"
  fi
}

apt_install() {  # apt_install COMMAND PACKAGE WHY: install PACKAGE when COMMAND is missing
  command -v "$1" >/dev/null 2>&1 && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { say "$1 is missing; install $2 ($3)"; exit 1; }
    sudo="sudo"
  fi
  say "installing $2 ($3)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$2" >/dev/null
}

build_compiled() {  # the node's hottest modules in C (worker/compiled.py); plain Python without
  ( apt_install cc gcc "compiling the node's hottest modules" ) || true
  local headers
  headers="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  if [ ! -f "$headers/Python.h" ]; then
    ( apt_install python3-config python3-dev "Python's headers, to compile the node's hottest modules" ) || true
  fi
  "$PY" -m worker.compiled build >/dev/null ||
    say "compiling the node's hottest modules failed: nodes run them as plain Python"
}

install_peers() {
  apt_install mvn maven "Maven resolves the RocketMQ releases"
  apt_install go golang-go "the Go client probe"
  apt_install cc gcc "the loopback bind library of the Java peers"
  "$PY" -m cluster.peers.install --java --go || { say "installing the RocketMQ peers failed"; exit 1; }
}

PEERS=""
for arg in "$@"; do
  case "$arg" in
    --peers) PEERS=1 ;;
    *) say "unknown option $arg"; exit 2 ;;
  esac
done

make_venv
install_package
install_java
install_browser
install_prometheus
build_compiled
[ -z "$PEERS" ] || install_peers
say "ready: $VENV"
