#!/usr/bin/env bash
# From a fresh clone: set up (with the RocketMQ peers the tests need), then run every test
# (unit, integration, spark, chaos, java, soak), lint (ruff) and type checks (mypy).
# Extra arguments go to pytest, e.g. scripts/test.sh -k supervisor (then one pytest run).
# Without them, two runs: the tests whose timing does not matter (unit, fuzz, integration,
# spark, and the java tests marked differential: they compare replies, not timings) on
# PYNAMESRV_TEST_JOBS processes (default 2, pytest-xdist, a module per process), then the
# chaos, other java, soak and serial tests one at a time, alone on the machine.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh" --peers || { echo "test: setup failed" >&2; exit 1; }
cd "$ROOT"

if ! java -version 2>&1 | grep -q 'version "\(1[7-9]\|[2-9][0-9]\)'; then
  for home in /usr/lib/jvm/java-17-openjdk-*; do
    [ -x "$home/bin/java" ] && export JAVA_HOME="$home" PATH="$home/bin:$PATH" && break
  done
fi
export SPARK_LOCAL_IP=127.0.0.1 PYTHONDONTWRITEBYTECODE=1

REPORT="$(mktemp -d "${TMPDIR:-/tmp}/pynamesrv-test.XXXXXX")"
export PYNAMESRV_REPORT_DIR="$REPORT"
start=$(date +%s)

.venv/bin/ruff check . > "$REPORT/ruff.txt" 2>&1
ruff_rc=$?
.venv/bin/mypy > "$REPORT/mypy.txt" 2>&1  # the packages and strictness of pyproject.toml
mypy_rc=$?

# Timing-sensitive or heavy: never beside another test. PYNAMESRV_TEST_SERIAL overrides the
# marker expression (e.g. "chaos or soak or serial" runs every java test in the parallel part,
# "chaos or java or soak or serial" none).
SERIAL="${PYNAMESRV_TEST_SERIAL:-chaos or soak or serial or (java and not differential)}"
if [ "$#" -gt 0 ]; then
  .venv/bin/pytest -m "" -p no:cacheprovider --junitxml="$REPORT/junit.xml" "$@"
  pytest_rc=$?
else
  jobs="${PYNAMESRV_TEST_JOBS:-2}"
  parallel=()
  # a module per process, the longest first (tests/conftest.py LONG_MODULES)
  [ "$jobs" -gt 1 ] && parallel=(-n "$jobs" --dist loadfile --no-loadscope-reorder)
  .venv/bin/pytest -m "not ($SERIAL)" "${parallel[@]}" -p no:cacheprovider \
    --junitxml="$REPORT/junit-parallel.xml"
  first_rc=$?
  .venv/bin/pytest -m "$SERIAL" -p no:cacheprovider --junitxml="$REPORT/junit.xml"
  pytest_rc=$?
  # Either run failing fails the command (a real failure code wins over 5, nothing collected).
  if [ "$first_rc" -ne 0 ] && { [ "$pytest_rc" -eq 0 ] || [ "$first_rc" -ne 5 ]; }; then
    pytest_rc=$first_rc
  fi
fi

elapsed=$(( $(date +%s) - start ))
echo
echo "================ pynamesrv test summary ================"
.venv/bin/python - "$REPORT"/junit*.xml <<'PY'
import sys
import xml.etree.ElementTree as ET
suites = []
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        continue
    suites += [root] if root.tag == "testsuite" else list(root)
if not suites:
    print("pytest: no report")
    sys.exit(0)
totals = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
passed = totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"]
print(f"pytest: {totals['tests']} tests, {passed} passed, {totals['failures']} failed, "
      f"{totals['errors']} errors, {totals['skipped']} skipped")
PY
if [ "$ruff_rc" -eq 0 ]; then echo "ruff:   clean"; else echo "ruff:   problems (see below)"; cat "$REPORT/ruff.txt"; fi
if [ "$mypy_rc" -eq 0 ]; then echo "mypy:   clean"; else echo "mypy:   problems (see below)"; cat "$REPORT/mypy.txt"; fi
for table in "$REPORT"/java-diff-*.md; do
  [ -f "$table" ] && echo "java:   $(head -n1 "$table" | sed 's/^# //'), recorded: $table"
done
echo "time:   ${elapsed}s   (report: $REPORT/junit*.xml)"
if [ "$pytest_rc" -eq 5 ]; then echo "pytest collected no tests: that is a failure here"; fi

if [ "$pytest_rc" -ne 0 ] || [ "$ruff_rc" -ne 0 ] || [ "$mypy_rc" -ne 0 ]; then
  echo "RESULT: FAILED (pytest exit $pytest_rc, ruff exit $ruff_rc, mypy exit $mypy_rc)"
  exit 1
fi
echo "RESULT: PASSED"
