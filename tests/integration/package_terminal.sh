#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Terminal manners, on every command: colour only on a terminal, never with
# NO_COLOR or --color never (also in error messages), never in a pipe;
# errors are one "passthru: error: ..." line with optional note/hint lines
# and the documented exit code, never a stack trace. Runs each command under
# a real pseudo-terminal (python3's pty module).
source "$(dirname "$0")/lib.inc"
need_binary
need python3
cp -a "$FIXTURES/epyc-4x2080ti" "$T/host"

# on_tty ARGS...: runs passthru with stdout and stderr on one pty; prints
# what it wrote (escapes kept) and exits with its status.
cat >"$T/on_tty.py" <<'EOF'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
EOF
# on_tty ARGS: passthru on a colour-capable terminal, NO_COLOR unset.
on_tty() { env -u NO_COLOR TERM=xterm timeout 60 python3 "$T/on_tty.py" "$PASSTHRU" "$@"; }
esc=$'\e['

host=(--root "$T/host")
cases=(
    "scan"
    "scan --json"
    "plan --vm 101 --gpus 0,1,2,3"
    "apply --dry-run --vm 101 --gpus 0,1,2,3"
    "verify --vm 101"
    "history"
    "rollback --dry-run"
    "confirm"
)

# 1. A terminal gets colour from scan (the command with the most of it).
out=$(on_tty "${host[@]}" scan || true)
[[ $out == *"$esc"* ]] || fail "scan on a terminal has no colour"

for c in "${cases[@]}"; do
    read -ra args <<<"$c"
    # 2. NO_COLOR, --color never and TERM=dumb: no escape anywhere, also not in errors.
    for mode in "NO_COLOR=1 TERM=xterm" "TERM=xterm --color never" "TERM=dumb"; do
        envs=() opts=()
        for w in $mode; do
            if [[ $w == --* || $w == never ]]; then opts+=("$w"); else envs+=("$w"); fi
        done
        out=$(env -u NO_COLOR "${envs[@]}" timeout 60 python3 "$T/on_tty.py" "$PASSTHRU" "${opts[@]}" "${host[@]}" "${args[@]}" </dev/null || true)
        [[ $out != *"$esc"* ]] || fail "'passthru $c' with $mode writes colour escapes"
    done
    # 3. A pipe never gets colour, even without NO_COLOR.
    out=$(env -u NO_COLOR TERM=xterm "$PASSTHRU" "${host[@]}" "${args[@]}" </dev/null 2>&1 || true)
    [[ $out != *"$esc"* ]] || fail "'passthru $c' into a pipe writes colour escapes"
    # 4. --json output is one JSON document and nothing else.
    if [[ " $c " == *" --json "* ]]; then
        "$PASSTHRU" "${host[@]}" "${args[@]}" 2>/dev/null | python3 -c 'import json,sys; json.load(sys.stdin)' ||
            fail "'passthru $c' stdout is not one JSON document"
    fi
done

# 5. Errors: format, exit code, colour only on a terminal.
check_error() { # EXPECTED_STATUS ARGS...
    local want=$1 status=0
    shift
    "$PASSTHRU" "$@" >/dev/null 2>"$T/err" </dev/null || status=$?
    [[ $status == "$want" ]] || fail "'passthru $*' exits $status, not $want"
    head -n 1 "$T/err" | grep -q '^passthru: error: ' || fail "'passthru $*' first stderr line: $(head -n 1 "$T/err")"
    if grep -v '^passthru: \(error\|note\|warning\): \|^hint: ' "$T/err" | grep -q .; then
        fail "'passthru $*' writes other lines to stderr: $(cat "$T/err")"
    fi
}
check_error 2 frobnicate
check_error 2
check_error 2 scan --frobnicate
check_error 2 --color purple scan
check_error 2 --root "$T/does-not-exist" scan
check_error 2 "${host[@]}" plan --vm abc --gpus all
check_error 2 "${host[@]}" plan --vm 101 --gpus ""
check_error 2 "${host[@]}" plan --vm 101 --bond-mode fast --bond eth0
check_error 1 "${host[@]}" confirm

out=$(on_tty frobnicate || true)
[[ $out == *"passthru: ${esc}"*"error:"* ]] || fail "an error on a terminal is not coloured: $out"
[[ $out == *"hint: "* ]] || fail "an unknown command gives no hint: $out"
out=$(on_tty --color never frobnicate || true)
[[ $out != *"$esc"* ]] || fail "--color never still colours the error: $out"

finish "terminal manners (${#cases[@]} command lines)"
