#!/usr/bin/env bash
# From a fresh clone: set up, then run the local cluster in the foreground (Ctrl-C stops it).
# Arguments go to `pynamesrv up`, e.g. scripts/up.sh -c my-cluster.yaml
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/pynamesrv" up "$@"
