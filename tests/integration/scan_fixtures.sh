#!/usr/bin/env bash
# passthru scan --json on a copy of every described fixture host: devices, GPU cards,
# verdicts, boot VGA and host readiness must match the description and its hand-written
# "expect" block, stdout must be one JSON document, and scan must not write into the root.
set -euo pipefail
src=${PASSTHRU_SOURCE_DIR:?PASSTHRU_SOURCE_DIR must point at the repository}
bin=${PASSTHRU:?PASSTHRU must point at the passthru binary}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/passthru-scan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

manifest() {  # every path with its type, target or content hash
    (cd "$1" && find . -printf '%y %p %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}

status=0
for desc in "$src"/tests/fixtures/descriptions/*.json; do
    name=$(basename "$desc" .json)
    root="$tmp/$name"
    cp -a "$src/tests/fixtures/hosts/$name" "$root"
    manifest "$root" >"$tmp/$name.before"
    rc=0
    "$bin" --root "$root" scan --json >"$tmp/$name.json" 2>"$tmp/$name.err" || rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "FAIL: $name: scan exited $rc"; cat "$tmp/$name.err"; status=1; continue
    fi
    if ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/$name.json"; then
        echo "FAIL: $name: stdout is not one JSON document"; status=1; continue
    fi
    manifest "$root" >"$tmp/$name.after"
    if ! diff -q "$tmp/$name.before" "$tmp/$name.after" >/dev/null; then
        echo "FAIL: $name: scan changed the root:"; diff "$tmp/$name.before" "$tmp/$name.after" | head -20; status=1
    fi
    python3 "$src/tests/integration/check_scan.py" "$desc" "$root" "$tmp/$name.json" || status=1
done
exit $status
