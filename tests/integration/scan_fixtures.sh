#!/usr/bin/env bash
# passthru scan --json on a copy of every described fixture host: devices, GPU cards,
# verdicts, boot VGA and host readiness must match the description and its hand-written
# "expect" block, stdout must be one JSON document, and scan must not write into the root.
source "$(dirname "$0")/lib.inc"
need_binary
src=$SRC
bin=$P

manifest() {  # every path with its type, target or content hash
    (cd "$1" && find . -printf '%y %p %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    root="$T/$name"
    cp -a "$src/tests/fixtures/hosts/$name" "$root"
    manifest "$root" >"$T/$name.before"
    rc=0
    "$bin" --root "$root" scan --json >"$T/$name.json" 2>"$T/$name.err" || rc=$?
    if [[ $rc -ne 0 ]]; then
        fail "$name: scan exited $rc"; cat "$T/$name.err"; continue
    fi
    if ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/$name.json"; then
        fail "$name: stdout is not one JSON document"; continue
    fi
    manifest "$root" >"$T/$name.after"
    if ! diff -q "$T/$name.before" "$T/$name.after" >/dev/null; then
        fail "$name: scan changed the root:"; diff "$T/$name.before" "$T/$name.after" | head -20
    fi
    python3 "$src/tests/integration/check_scan.py" "$desc" "$root" "$T/$name.json" || fail "$name: check_scan.py"
done
finish "scan --json agrees with every fixture description"
