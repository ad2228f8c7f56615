#!/usr/bin/env bash
# The committed fixture trees must be exactly what the generator makes from the
# descriptions: fails when a tree was edited by hand, or when the generator or a
# description changed without tests/fixtures/regen.sh being run.
source "$(dirname "$0")/lib.inc"
src=$SRC

"$src/tests/fixtures/regen.sh" "$T/hosts"

for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    if [[ ! -d "$src/tests/fixtures/hosts/$name" ]]; then
        fail "tests/fixtures/hosts/$name is missing (run tests/fixtures/regen.sh)"
    fi
done
# Trees without a description (captured from a real kernel by tests/vm) are not ours to
# regenerate; only generated trees are compared.
for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    [[ -d "$src/tests/fixtures/hosts/$name" ]] || continue
    if ! diff -r --no-dereference "$T/hosts/$name" "$src/tests/fixtures/hosts/$name"; then
        fail "tests/fixtures/hosts/$name differs from the generator's output (run tests/fixtures/regen.sh)"
    fi
done
# absolute symlinks would escape a copied root
if find "$src/tests/fixtures/hosts" -type l -lname '/*' | grep -q .; then
    fail "absolute symlinks in fixture trees:"
    find "$src/tests/fixtures/hosts" -type l -lname '/*'
fi
# every symlink must resolve inside its own host root
while IFS= read -r -d '' link; do
    if [[ ! -e "$link" ]]; then
        fail "dangling symlink $link -> $(readlink "$link")"
    fi
done < <(find "$src/tests/fixtures/hosts" -type l -print0)
finish "fixture trees match their descriptions"
