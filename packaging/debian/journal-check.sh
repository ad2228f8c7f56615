# passthru_applied: prints one line per generation under
# /var/lib/passthru/generations that still has an effect on the host, with
# the files it changed: apply generations that are committed and not undone
# by a committed rollback generation, and generations left "pending" or
# "restore-failed" by an interrupted transaction. The manifests are
# passthru.generation/2 (or /1) documents written with two-space indentation
# (src/apply/journal.cpp); awk reads their top-level keys. A manifest it
# cannot read counts as applied, to be safe. $1: a host root other than /
# (the tests use this).
passthru_applied() {
    set -- "${1:-}"/var/lib/passthru/generations/*/manifest.json
    [ -f "$1" ] || return 0
    awk '
        FNR == 1 { n++; id[n] = FILENAME; sub(/\/manifest\.json$/, "", id[n]); sub(/.*\//, "", id[n]); kind[n] = ""; state[n] = ""; files[n] = ""; inundo = 0 }
        /^  "kind": "/ { v = $0; sub(/^  "kind": "/, "", v); sub(/".*/, "", v); kind[n] = v }
        /^  "state": "/ { v = $0; sub(/^  "state": "/, "", v); sub(/".*/, "", v); state[n] = v }
        /^  "undoes": \[\],?$/ { next }
        /^  "undoes": \[/ { inundo = 1; next }
        inundo && /^  \]/ { inundo = 0; next }
        inundo { v = $0; gsub(/[^0-9]/, "", v); if (v != "") undoes[n] = undoes[n] " " v }
        /^ +"path": "/ { v = $0; sub(/^ +"path": "/, "", v); sub(/".*/, "", v); files[n] = files[n] " " v }
        END {
            for (i = 1; i <= n; i++) {
                if (kind[i] == "rollback" && state[i] == "committed") {
                    m = split(undoes[i], u, " ")
                    for (j = 1; j <= m; j++) undone[u[j] + 0] = 1
                }
            }
            for (i = 1; i <= n; i++) {
                why = ""
                if (state[i] == "pending" || state[i] == "restore-failed") why = "interrupted (" state[i] ")"
                else if (kind[i] == "" || state[i] == "") why = "unreadable manifest"
                else if (kind[i] == "apply" && state[i] == "committed") {
                    key = id[i] + 0
                    if (!(key in undone)) why = "applied"
                }
                if (why != "") printf "  generation %s, %s:%s\n", id[i], why, files[i]
            }
        }' "$@"
}
