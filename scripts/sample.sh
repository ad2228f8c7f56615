#!/usr/bin/env bash
# Installs what building passthru needs (scripts/deps.sh --group build: nothing outside
# the release's main suite), builds the passthru binary and its man page only, runs
# `passthru scan` on the bundled sample host (the 4x RTX 2080 Ti 22 GB EPYC build of the
# seed guide) and says where the binary and the man page are.
#
#   scripts/sample.sh [SCAN-ARGS...]
#
# The build directory is the one scripts/test.sh --quick uses (build/, or
# PASSTHRU_BUILD_DIR), configured the same way, so the quick tests build on it
# instead of starting again. Progress goes to stderr: a stamp with the elapsed time
# before each step, and the compiler's own progress lines.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${PASSTHRU_BUILD_DIR:-$here/build}
sample=$here/tests/fixtures/hosts/epyc-4x2080ti
start=$SECONDS
stamp() { printf '== [%d:%02d] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*" >&2; }

stamp "dependencies: the build group (scripts/deps.sh --group build)"
bash "$here/scripts/deps.sh" --group build >&2
stamp "configuring $build"
# the configuration of scripts/test.sh --quick (keep the two alike)
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
      -DPASSTHRU_WARNINGS_AS_ERRORS=ON >/dev/null
stamp "building passthru and its man page on $(nproc) CPUs"
cmake --build "$build" -j"$(nproc)" --target passthru passthru_docs >&2
stamp "passthru --root $sample scan"
rc=0
"$build/passthru" --root "$sample" scan "$@" || rc=$?
stamp "done in $((SECONDS - start)) s (scan: exit $rc)"
rel=$build
[[ $build != "$PWD"/* ]] || rel=./${build#"$PWD"/}
cat >&2 <<EOF
The binary:   $build/passthru
The man page: $build/doc/passthru.1
Try them:
  $rel/passthru --root $sample scan
  man -l $rel/doc/passthru.1
To try plan and apply, work on a copy of the sample host (cp -a $sample /tmp/host),
then $rel/passthru --root /tmp/host plan; see README.md, "Try it on the sample host".
EOF
exit "$rc"
