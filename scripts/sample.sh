#!/usr/bin/env bash
# Installs the dependencies, builds passthru and runs `passthru scan` on the
# bundled sample host: the 4x RTX 2080 Ti 22 GB EPYC build of the seed guide.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build-sample}

bash "$here/scripts/deps.sh" >&2
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
exec "$build/passthru" --root "$here/tests/fixtures/hosts/epyc-4x2080ti" scan "$@"
