#!/usr/bin/env bash
# The committed fixture trees must be exactly what the generator makes from the
# descriptions: fails when a tree was edited by hand, or when the generator or a
# description changed without tests/fixtures/regen.sh being run.
set -euo pipefail
src=${PASSTHRU_SOURCE_DIR:?PASSTHRU_SOURCE_DIR must point at the repository}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/passthru-fixtures.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$src/tests/fixtures/regen.sh" "$tmp/hosts"

status=0
for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    if [[ ! -d "$src/tests/fixtures/hosts/$name" ]]; then
        echo "FAIL: tests/fixtures/hosts/$name is missing (run tests/fixtures/regen.sh)"
        status=1
    fi
done
# Trees without a description (captured from a real kernel by tests/vm) are not ours to
# regenerate; only generated trees are compared.
for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    [[ -d "$src/tests/fixtures/hosts/$name" ]] || continue
    if ! diff -r --no-dereference "$tmp/hosts/$name" "$src/tests/fixtures/hosts/$name"; then
        echo "FAIL: tests/fixtures/hosts/$name differs from the generator's output (run tests/fixtures/regen.sh)"
        status=1
    fi
done
# absolute symlinks would escape a copied root
if find "$src/tests/fixtures/hosts" -type l -lname '/*' | grep -q .; then
    echo "FAIL: absolute symlinks in fixture trees:"
    find "$src/tests/fixtures/hosts" -type l -lname '/*'
    status=1
fi
# every symlink must resolve inside its own host root
while IFS= read -r -d '' link; do
    if [[ ! -e "$link" ]]; then
        echo "FAIL: dangling symlink $link -> $(readlink "$link")"
        status=1
    fi
done < <(find "$src/tests/fixtures/hosts" -type l -print0)
[[ $status -eq 0 ]] && echo "ok: fixture trees match their descriptions"
exit $status
