#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Hostile input: the repro of each finding of a hardening review, each asserting
# the safe outcome: a normal exit with a documented code and one clear line,
# nothing written outside the root, and the tree byte-identical where nothing
# may be written.
source "$(dirname "$0")/lib.inc"
need_binary

# crashed RC: true when RC is a signal's (a crash is never a safe outcome).
crashed() { [[ $1 -ge 128 ]]; }

# section_ok MSG: ok MSG unless a check failed since the last section_start.
section_start() { SECTION_F0=$LIB_FAILED; }
section_ok() {
    if [[ $LIB_FAILED -eq $SECTION_F0 ]]; then
        ok "$*"
    fi
}

# run_rc CMD...: runs CMD with stdout/stderr in $T/out, $T/err; its exit code in RC.
run_rc() {
    RC=0
    "$@" > "$T/out" 2> "$T/err" || RC=$?
}

# --- High: a line of 60 KB in any file of the host ---------------------------
# libstdc++'s std::regex recurses once per character; a long line in another
# VM's config (also in [PENDING]), in storage.cfg or in the mapping file killed
# plan, apply and verify with SIGSEGV.
long=$(head -c 60000 /dev/zero | tr '\0' A)
R=$T/long
copy_host epyc-4x2080ti "$R"
printf 'description: %s\nname: other\n' "$long" > "$R/etc/pve/qemu-server/102.conf"
printf 'name: pend\n\n[PENDING]\ndescription: %s\n' "$long" > "$R/etc/pve/qemu-server/103.conf"
printf 'dir: local\n\tpath /var/lib/vz\n\tcontent iso,images\n\tcomment %s\n' "$long" > "$R/etc/pve/storage.cfg"
mkdir -p "$R/etc/pve/mapping"
printf 'other\n\tmap id=10de:1e07,node=pve,path=0000:41:00.0\n\tdescription %s\n' "$long" > "$R/etc/pve/mapping/pci.cfg"
own_copy "$R/etc/pve/qemu-server/101.conf"
printf 'description: %s\n' "$long" >> "$R/etc/pve/qemu-server/101.conf"
for cmd in "plan --vm 101 --gpus all" "plan --vm 101 --gpus all --json" "apply --vm 101 --gpus all --yes" "verify --vm 101" "rollback --yes"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    if crashed "$RC"; then
        fail "long lines: '$cmd' crashed (exit $RC)"
    elif [[ $cmd == plan* || $cmd == apply* || $cmd == rollback* ]] && [[ $RC -ne 0 ]]; then
        fail "long lines: '$cmd' exit $RC: $(head -3 "$T/err")"
    fi
done
stop_if_failed
ok "a 60 KB line in VM configs ([PENDING] too), storage.cfg and pci.cfg: plan, apply, verify, rollback exit normally"

# --- High: plan --out FILE and a symlink planted at its temporary name -------
# plan wrote the predictable FILE.tmp as root, following a symlink placed there.
R=$T/out-root
copy_host epyc-4x2080ti "$R"
mkdir -p "$T/save" "$T/victim"
echo "precious" > "$T/victim/file"
chmod 0644 "$T/victim/file"
ln -s "$T/victim/file" "$T/save/plan.json.tmp"
ln -s "$T/victim/file" "$T/save/.plan.json.passthru-tmp"
victim_before=$(tree_sum "$T/victim")
save_before=$(ls -A "$T/save")
umask_saved=$(umask)
umask 000
run_rc "$P" --root "$R" plan --vm 101 --gpus all --out "$T/save/plan.json"
umask "$umask_saved"
[[ $RC -eq 0 ]] || fail "plan --out: exit $RC: $(head -3 "$T/err")"
[[ $(tree_sum "$T/victim") == "$victim_before" ]] || fail "plan --out wrote through a symlink at its temporary name"
[[ -f $T/save/plan.json && ! -L $T/save/plan.json ]] || fail "plan --out did not write the plan"
[[ $(stat -c %a "$T/save/plan.json") == 600 ]] || fail "plan --out: mode $(stat -c %a "$T/save/plan.json"), expected 0600"
[[ $(ls -A "$T/save" | grep -v '^plan.json$' | tr '\n' ' ') == "$(echo "$save_before" | tr '\n' ' ')" ]] \
    || fail "plan --out left a temporary file: $(ls -A "$T/save")"
# a symlink at FILE itself is refused (exit 3), neither followed nor replaced
rm "$T/save/plan.json"
ln -s "$T/victim/file" "$T/save/plan.json"
run_rc "$P" --root "$R" plan --vm 101 --gpus all --out "$T/save/plan.json"
[[ $RC -eq 3 ]] || fail "plan --out onto a symlink: exit $RC, not 3"
[[ $(tree_sum "$T/victim") == "$victim_before" ]] || fail "plan --out wrote through a symlink at FILE"
[[ -L $T/save/plan.json ]] || fail "plan --out replaced the symlink at FILE"
ok "plan --out: unique temporary name, O_EXCL|O_NOFOLLOW, mode 0600, a symlink at FILE refused"

# --- Medium: the passthru binary ignores the test-only fault hook ------------
# It honoured PASSTHRU_TEST_FAULT unless the package build turned the hook off;
# only the test-only passthru-faults binary carries it now.
section_start
R=$T/fault
copy_host epyc-4x2080ti "$R"
run_rc env PASSTHRU_TEST_FAULT=kill@1 PASSTHRU_TEST_FAULT_TRACE=1 "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 0 ]] || fail "PASSTHRU_TEST_FAULT=kill@1: passthru exit $RC (it must ignore the test-only hook)"
! grep -q '^fault-point ' "$T/err" || fail "passthru printed fault points (PASSTHRU_TEST_FAULT_TRACE)"
[[ $(generations "$R") -eq 1 ]] || fail "the apply under PASSTHRU_TEST_FAULT did not finish"
! grep -q PASSTHRU_TEST_FAULT "$P" || fail "the passthru binary carries the fault hook's environment names"
section_ok "passthru ignores PASSTHRU_TEST_FAULT and PASSTHRU_TEST_FAULT_TRACE (the hook is in passthru-faults only)"

# --- Medium: a saved plan edited after review --------------------------------
# apply --plan FILE trusted the file: an edited plan made a setuid-root file,
# wrote root's authorized_keys, deleted /etc/default/grub, passed the SATA
# controller and ran `sh -c` as an after-step. Now apply plans the recorded
# request again and refuses (exit 3) a plan that is not exactly that plan.
section_start
R=$T/saved
copy_host epyc-4x2080ti "$R"
S0=$(tree_sum "$R")
"$P" --root "$R" plan --vm 101 --gpus all --out "$T/reviewed.json" > /dev/null
sata=$(grep -l '^0x010601' "$R"/sys/bus/pci/devices/*/class | head -1 | xargs dirname | xargs basename)
[[ -n $sata ]] || fail "the fixture has no SATA controller to pass"
for edit in setuid authorized_keys delete_grub sata after_step mode reason; do
    copy_host epyc-4x2080ti "$R"
    python3 - "$T/reviewed.json" "$T/edited.json" "$edit" "$sata" <<'PY'
import hashlib, json, sys
plan = json.load(open(sys.argv[1]))
edit, sata = sys.argv[3], sys.argv[4]
def new_file(path, content, mode):
    return {"path": path, "action": "create", "content": content, "before": None, "before_sha256": None,
            "after_sha256": hashlib.sha256(content.encode()).hexdigest(), "mode": mode, "reasons": ["x"]}
if edit == "setuid":
    plan["files"].append(new_file("/usr/local/bin/helper", "#!/bin/sh\nexec /bin/sh\n", "4755"))
elif edit == "authorized_keys":
    plan["files"].append(new_file("/root/.ssh/authorized_keys", "ssh-ed25519 AAAA intruder\n", "0600"))
elif edit == "delete_grub":
    before = open(sys.argv[2].rsplit("/", 1)[0] + "/saved/etc/default/grub").read()
    plan["files"].append({"path": "/etc/default/grub", "action": "delete", "content": None, "before": before,
                          "before_sha256": hashlib.sha256(before.encode()).hexdigest(), "after_sha256": None,
                          "mode": "0644", "reasons": ["x"]})
    plan["files"] = [f for f in plan["files"] if f["path"] != "/etc/default/grub" or f["action"] == "delete"]
elif edit == "sata":
    for f in plan["files"]:
        if f["path"] == "/etc/modprobe.d/passthru-vfio.conf":
            f["content"] += "install ahci echo %s > /sys/bus/pci/drivers/vfio-pci/bind\n" % sata
            f["after_sha256"] = hashlib.sha256(f["content"].encode()).hexdigest()
elif edit == "after_step":
    plan["commands"].append({"argv": ["sh", "-c", "touch /PWNED"], "reason": "x"})
elif edit == "mode":
    plan["files"][0]["mode"] = "0666"
elif edit == "reason":
    plan["files"][0]["reasons"] = ["nothing to see here"]
json.dump(plan, open(sys.argv[2], "w"))
PY
    run_rc "$P" --root "$R" apply --plan "$T/edited.json" --yes
    [[ $RC -eq 3 ]] || fail "edited plan ($edit): exit $RC, expected 3: $(tail -2 "$T/err")"
    grep -q "^passthru: error: refused: the saved plan $T/edited.json is not what passthru plans for its request" "$T/err" \
        || fail "edited plan ($edit): not explained: $(grep error "$T/err")"
    [[ $(tree_sum "$R") == "$S0" && ! -e $R/var/lib/passthru && ! -e $R/usr/local/bin/helper && ! -e $R/root/.ssh ]] \
        || fail "edited plan ($edit): something was written"
done
run_rc "$P" --root "$R" apply --plan "$T/reviewed.json" --yes
[[ $RC -eq 0 ]] || fail "the reviewed plan itself: exit $RC: $(tail -2 "$T/err")"
section_ok "an edited saved plan (setuid file, authorized_keys, /etc/default/grub deleted, SATA passed, sh -c, a mode, a reason) is refused (exit 3), nothing written; the reviewed plan applies"

# --- Low: --vm values, --json on failure, a --root that is / or unreadable ---
section_start
R=$T/low
copy_host epyc-4x2080ti "$R"
S0=$(tree_sum "$R")
for v in 0 99 99999999999 1000000000 123456789012345678901234567890 -1 0101 1e3 ''; do
    run_rc "$P" --root "$R" plan --vm "$v" --gpus all
    [[ $RC -eq 2 ]] || fail "--vm '$v': exit $RC, expected 2 (bad input): $(head -1 "$T/err")"
    [[ $(grep -c '^passthru: error: ' "$T/err") -eq 1 ]] || fail "--vm '$v': not one error line"
done
grep -q 'without leading zeros' <("$P" --root "$R" plan --vm 0101 --gpus all 2>&1) || fail "--vm 0101: leading zeros not named"
[[ $(tree_sum "$R") == "$S0" && ! -e $R/var/lib/passthru ]] || fail "a bad --vm wrote something"

for cmd in "plan --vm 101 --gpus 7 --json" "plan --vm 99 --gpus all --json" "scan --json --no-such-option" "history --json --to"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" $cmd
    python3 - "$T/out" "$RC" <<'PY' || fail "'$cmd --json' on failure: no single JSON error document on stdout: $(head -c 300 "$T/out")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "passthru.error/1", doc
assert doc["error"]["exit_code"] == int(sys.argv[2]) != 0, doc
assert doc["error"]["message"] and isinstance(doc["error"]["hints"], list), doc
PY
    [[ $(grep -c '^passthru: error: ' "$T/err") -eq 1 ]] || fail "'$cmd': the error line is not on stderr"
done
run_rc "$P" --root "$R" plan --vm 99 --gpus all
[[ ! -s $T/out ]] || fail "without --json a failure printed on stdout"

# --root that resolves to / must not switch to the live host (scan only: it
# reads, so even a regression here writes nothing on this machine).
ln -s / "$T/slash"
for root in "$T/slash" /tmp/.. "$T/slash/tmp/.." //; do
    run_rc "$P" --root "$root" scan
    [[ $RC -eq 2 ]] || fail "--root $root (resolves to /): exit $RC, expected 2"
    grep -q 'resolves to /, this host itself' "$T/err" || fail "--root $root: not explained: $(head -1 "$T/err")"
    [[ ! -s $T/out ]] || fail "--root $root: scanned the live host"
done
if [[ $(id -u) -eq 0 ]] && setpriv --reuid=65534 --regid=65534 --clear-groups "$P" --version > /dev/null 2>&1; then
    mkdir -m 0700 "$T/private" && cp -a "$R" "$T/private/root"
    run_rc setpriv --reuid=65534 --regid=65534 --clear-groups "$P" --root "$T/private/root" scan
    [[ $RC -eq 2 ]] || fail "an unreadable --root: exit $RC, expected 2"
    grep -q 'cannot read root' "$T/err" || fail "an unreadable --root: $(head -1 "$T/err")"
fi
section_ok "--vm outside 100-999999999, with leading zeros or not a number: exit 2; --json failures print one passthru.error/1 document; a --root resolving to / or unreadable is refused (exit 2)"

# --- Low: a dangling symlink at the VM's config is not "no such VM" ---------
# It was taken for a missing config, so the plan created VM 101 with 'qm create'
# over it. Anything at the path counts: what is not a regular file is refused.
section_start
R=$T/dangling
copy_host epyc-4x2080ti "$R"
rm -f "$R/etc/pve/qemu-server/101.conf"
ln -s ../gone/101.conf "$R/etc/pve/qemu-server/101.conf"
S0=$(tree_sum "$R")
run_rc "$P" --root "$R" plan --vm 101 --gpus all
[[ $RC -eq 3 ]] || fail "a dangling 101.conf symlink: plan exit $RC, expected 3"
grep -q '101.conf is not a regular file' "$T/err" || fail "a dangling 101.conf symlink: not explained: $(head -1 "$T/err")"
grep -q 'qm create' "$T/out" "$T/err" && fail "a dangling 101.conf symlink: the plan still creates the VM"
run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 3 && $(tree_sum "$R") == "$S0" && ! -e $R/var/lib/passthru/generations ]] || fail "a dangling 101.conf symlink: apply exit $RC or wrote something"
section_ok "a dangling symlink at the VM's config is refused (exit 3), not replaced by a new VM"

# --- Low: rollback and recovery trust the manifest --------------------------
# A journal edited by hand: ".." in a path (rollback deleted a file outside
# /etc), "before_sha256": null on a file apply modified (rollback deleted it),
# mode 4777 (rollback recreated the file setuid), an after-step matched by
# its basename (/tmp/evil/update-grub re-run as update-grub), the same in a
# generation left pending (recovery). Now each is refused (exit 3, one
# line) and nothing is written.
section_start
R=$T/manifest
for edit in dotdot null_before setuid basename recovery; do
    copy_host epyc-4x2080ti "$R"
    "$P" --root "$R" apply --vm 101 --gpus all --yes > /dev/null 2>&1 || fatal "apply on the fixture failed"
    echo "precious" > "$R/victim"
    python3 - "$R" "$edit" <<'PY'
import hashlib, json, sys
root, edit = sys.argv[1], sys.argv[2]
path = root + "/var/lib/passthru/generations/1/manifest.json"
m = json.load(open(path))
modified = next(f for f in m["files"] if f["action"] == "modify")
if edit in ("dotdot", "recovery"):
    m["files"].append({"path": "/etc/modprobe.d/../../victim", "action": "create", "before_sha256": None,
                       "after_sha256": hashlib.sha256(b"precious\n").hexdigest(), "mode": "0644",
                       "owner": {"uid": 0, "gid": 0}})
    if edit == "recovery":
        m["state"] = "pending"
elif edit == "null_before":
    modified["before_sha256"] = None
elif edit == "setuid":
    modified["mode"] = "4777"
elif edit == "basename":
    m["commands"].append({"argv": ["/tmp/evil/update-grub"], "reason": "x", "status": "recorded", "exit_code": 0})
json.dump(m, open(path, "w"), indent=2)
PY
    args=(rollback --yes)
    if [[ $edit == setuid ]]; then
        victim=$(jq -r '.files[] | select(.mode == "4777") | .path' "$R/var/lib/passthru/generations/1/manifest.json")
        rm "$R$victim"
        args=(rollback --yes --force)
    fi
    S1=$(tree_sum --with-journal "$R")
    run_rc "$P" --root "$R" "${args[@]}"
    [[ $RC -eq 3 ]] || fail "tampered manifest ($edit): exit $RC, expected 3: $(head -2 "$T/err")"
    [[ $(grep -c '^passthru: error:' "$T/err") -eq 1 ]] && grep -q "^passthru: error: generation 1's manifest was not written by passthru: " "$T/err" \
        || fail "tampered manifest ($edit): not one clear line: $(cat "$T/err")"
    [[ $(tree_sum --with-journal "$R") == "$S1" && -f $R/victim ]] || fail "tampered manifest ($edit): something was written or removed"
    [[ -z $(find "$R" -perm /6000 -print -quit) ]] || fail "tampered manifest ($edit): a setuid or setgid file appeared"
done
section_ok "a tampered manifest ('..' in a path, before_sha256 null, mode 4777, an after-step by basename, in recovery too) is refused (exit 3, one line), nothing written"

# --- Low: owner and mode of recreated files and created directories --------
# A file rollback recreated came back root:root instead of its journaled
# owner (PVE's /etc/pve/qemu-server/101.conf is root:www-data 0640), and the
# directories apply made followed the umask (0700 under umask 077). Now the
# journal's owner, group and mode are restored exactly and new directories
# are 0755 whatever the umask.
section_start
R=$T/owners
copy_host epyc-4x2080ti "$R"
conf=$R/etc/pve/qemu-server/101.conf
own_copy "$conf"
chown 0:33 "$conf"
chmod 0640 "$conf"
[[ ! -e $R/etc/default/grub.d ]] || fatal "the fixture already has /etc/default/grub.d: no directory for apply to make"
S0=$(tree_sum "$R")
run_rc bash -c 'umask 077 && exec "$@"' umask077 "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 0 ]] || fail "apply under umask 077: exit $RC: $(head -3 "$T/err")"
[[ $(stat -c %a "$R/etc/default/grub.d") == 755 ]] || fail "a directory apply made under umask 077 is $(stat -c %a "$R/etc/default/grub.d"), not 755"
[[ $(stat -c '%u:%g %a' "$conf") == "0:33 640" ]] || fail "apply changed 101.conf's owner or mode: $(stat -c '%u:%g %a' "$conf")"
# The VM config disappears after apply (deleted by hand, say): rollback
# --force brings it back as the journal recorded it.
rm "$conf"
run_rc bash -c 'umask 077 && exec "$@"' umask077 "$P" --root "$R" rollback --yes --force
[[ $RC -eq 0 ]] || fail "rollback --force: exit $RC: $(head -3 "$T/err")"
[[ $(stat -c '%u:%g %a' "$conf" 2> /dev/null) == "0:33 640" ]] ||
    fail "rollback recreated 101.conf as $(stat -c '%u:%g %a' "$conf" 2> /dev/null), not root:www-data 0640"
[[ $(tree_sum "$R") == "$S0" ]] || fail "after rollback the tree is not byte-identical (owners and modes included)"
section_ok "a file rollback recreates gets its journaled owner, group and mode (root:www-data 0640); directories apply makes are 0755 under umask 077"

# --- Low: a refusal under the journal's lock leaves no lock file behind -----
# rollback --trial-fallback and an apply refused after taking the lock made
# /var/lib/passthru/lock (and its directories) on a root that had none:
# exit 3 must mean nothing written.
section_start
R=$T/lockleft
copy_host epyc-4x2080ti "$R"
[[ ! -e $R/var/lib/passthru ]] || fatal "the fixture already has /var/lib/passthru"
S0=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" rollback --yes --trial-fallback
[[ $RC -eq 3 ]] || fail "rollback --trial-fallback without a trial: exit $RC, expected 3: $(head -1 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$S0" && ! -e $R/var/lib/passthru ]] \
    || fail "a refused rollback --trial-fallback left $(cd "$R" && find var/lib/passthru 2> /dev/null | tr '\n' ' ')"
# apply refused at its preflight, under the lock (a file it changes is a symlink)
mv "$R/etc/default/grub" "$R/etc/default/grub.real"
ln -s grub.real "$R/etc/default/grub"
S0=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 3 ]] || fail "apply with /etc/default/grub a symlink: exit $RC, expected 3: $(head -1 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$S0" && ! -e $R/var/lib/passthru ]] || fail "a refused apply left $(cd "$R" && find var/lib/passthru 2> /dev/null | tr '\n' ' ')"
# after a real apply, a refused rollback (a file changed by hand: exit 1) adds no lock file either
rm "$R/etc/default/grub" && mv "$R/etc/default/grub.real" "$R/etc/default/grub"
run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 0 ]] || fail "apply: exit $RC: $(head -1 "$T/err")"
[[ ! -e $R/var/lib/passthru/lock ]] || fail "apply left its lock file behind"
echo '# by hand' >> "$R/etc/modprobe.d/passthru-vfio.conf"
S1=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" rollback --yes
[[ $RC -eq 1 && $(tree_sum --with-journal "$R") == "$S1" ]] || fail "a refused rollback (exit $RC) wrote something"
section_ok "refusals under the journal's lock (rollback --trial-fallback, apply, rollback) leave the tree byte-identical, lock file and its directories included"

# --- Low: the human plan and bytes that are not UTF-8 -----------------------
# A Latin-1 byte in a VM description made the human plan fail (the JSON it
# built for the pending plan could not be written) while apply worked.
section_start
R=$T/latin1
copy_host epyc-4x2080ti "$R"
own_copy "$R/etc/pve/qemu-server/101.conf"
{ printf 'description: caf\xe9 \xff%s\n' ''; cat "$R/etc/pve/qemu-server/101.conf"; } > "$T/101.conf"
cat "$T/101.conf" > "$R/etc/pve/qemu-server/101.conf"
run_rc "$P" --root "$R" --color never plan --vm 101 --gpus all
[[ $RC -eq 0 ]] || fail "human plan with a Latin-1 description: exit $RC, expected 0: $(head -2 "$T/err")"
grep -qF 'description: caf\xe9 \xff' "$T/out" || fail "the human plan does not show the bytes escaped: $(grep -a 'description' "$T/out" | head -2 | cat -v)"
LC_ALL=C grep -qa $'\xe9' "$T/out" && fail "the human plan printed a raw non-UTF-8 byte"
grep -q 'not recorded as the pending plan: a file holds bytes that are not UTF-8' "$T/err" || fail "no note that the plan was not recorded: $(cat "$T/err")"
for opt in --json "--out $T/latin1.json --json"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" plan --vm 101 --gpus all $opt
    [[ $RC -eq 1 ]] || fail "plan $opt with a non-UTF-8 byte: exit $RC, expected 1"
    jq -e '.schema == "passthru.error/1" and (.error.message | test("not UTF-8"))' "$T/out" > /dev/null \
        || fail "plan $opt: not one valid passthru.error/1 document: $(head -c 300 "$T/out")"
done
[[ ! -e $T/latin1.json ]] || fail "plan --out wrote a plan that cannot carry the bytes"
run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 0 ]] || fail "apply with a Latin-1 description: exit $RC"
section_ok "bytes that are not UTF-8: the human plan shows them as \\xNN (exit 0, not recorded as pending); --json/--out print one passthru.error/1 document (exit 1)"

# --- Low: a [PENDING] hostpci of the VM naming a selected card -------------
# It was ignored: the plan put the card in hostpci0 as well, so it was passed
# twice once Proxmox applied the pending change at the next VM start.
section_start
R=$T/pendcard
copy_host epyc-4x2080ti "$R"
own_copy "$R/etc/pve/qemu-server/101.conf"
printf '\n[PENDING]\nhostpci3: 0000:41:00,pcie=1\n' >> "$R/etc/pve/qemu-server/101.conf"
S0=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" plan --vm 101 --gpus all
[[ $RC -eq 3 ]] || fail "a pending hostpci naming a selected card: plan exit $RC, expected 3"
grep -q 'VM 101 has a pending change that passes .*hostpci3: 0000:41:00,pcie=1, in \[PENDING\]' "$T/err" || fail "not explained: $(head -2 "$T/err")"
grep -q "qm set 101 --revert hostpci3" "$T/out" "$T/err" || fail "the way out (qm set --revert) is not named"
run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 3 && $(tree_sum --with-journal "$R") == "$S0" ]] || fail "apply exit $RC or wrote something"
section_ok "a [PENDING] hostpci of the VM naming a selected card is refused (exit 3) with 'qm set --revert' as the way out"

# --- Low: nested source in /etc/network/interfaces -------------------------
# A bridge defined in a file that a sourced file sources was not seen; a
# cycle of sources must be refused, not followed for ever.
section_start
R=$T/nested
copy_host epyc-4x2080ti "$R"
net=(--vm 101 --gpus all --bond enp66s0f0,enp66s0f1 --address 192.168.1.252/24 --gateway 192.168.1.1)
mkdir -p "$R/etc/network/interfaces.d" "$R/etc/network/more.d"
echo 'source-directory /etc/network/more.d' > "$R/etc/network/interfaces.d/extra"
printf 'auto vmbr0\niface vmbr0 inet manual\n' > "$R/etc/network/more.d/bridge"
S0=$(tree_sum --with-journal "$R")
run_rc "$P" --root "$R" plan "${net[@]}"
[[ $RC -eq 3 ]] || fail "vmbr0 defined two sources deep: plan exit $RC, expected 3"
grep -q 'vmbr0 is defined in /etc/network/more.d/bridge' "$T/err" || fail "nested source not followed: $(head -1 "$T/err")"
[[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "the refused plan wrote something"
echo 'source /etc/network/interfaces' > "$R/etc/network/more.d/bridge"
run_rc timeout 20 "$P" --root "$R" plan "${net[@]}"
[[ $RC -eq 3 ]] || fail "sources in a loop: plan exit $RC, expected 3"
grep -q 'source each other in a loop' "$T/err" || fail "a loop of sources not explained: $(head -1 "$T/err")"
section_ok "source/source-directory in sourced files are followed; a loop is refused (exit 3), never followed for ever"

# --- Low: the saved plan is readable by its owner only ---------------------
# It carries whole root-only files (a VM config's cipassword).
section_start
R=$T/secret
copy_host epyc-4x2080ti "$R"
own_copy "$R/etc/pve/qemu-server/101.conf"
echo 'cipassword: $5$secret$hash' >> "$R/etc/pve/qemu-server/101.conf"
install -m 0644 /dev/null "$T/secret.json"
umask_saved=$(umask)
umask 022
run_rc "$P" --root "$R" plan --vm 101 --gpus all --out "$T/secret.json"
umask "$umask_saved"
[[ $RC -eq 0 ]] || fail "plan --out: exit $RC"
grep -q 'cipassword' "$T/secret.json" || fail "the saved plan does not carry the VM config (the test proves nothing)"
[[ $(stat -c %a "$T/secret.json") == 600 ]] || fail "plan --out over a 0644 file: mode $(stat -c %a "$T/secret.json"), expected 0600"
section_ok "plan --out: the saved plan (with a VM config's cipassword) is mode 0600, also over an existing 0644 file"

# --- Low: confirm after a rollback ------------------------------------------
# An apply killed while its network guard waited left network-confirm.pending;
# after rollback, confirm said "confirmed" to nobody. It must say there is
# nothing to confirm (exit 1), and rollback removes the stale handshake.
section_start
R=$T/staleconfirm
copy_host epyc-4x2080ti "$R"
mkdir -p "$R/proc/net"
printf 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\nvmbr0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n' > "$R/proc/net/route"
"$P" --root "$R" apply --yes "${net[@]}" --apply-network --confirm-timeout 60 > "$T/guard.out" 2>&1 &
guard_pid=$!
for _ in $(seq 1 200); do
    [[ -f $R/var/lib/passthru/network-confirm.pending ]] && break
    sleep 0.1
done
[[ -f $R/var/lib/passthru/network-confirm.pending ]] || fail "the guard never waited: $(tail -3 "$T/guard.out")"
kill -9 "$guard_pid" && wait "$guard_pid" 2> /dev/null || true
run_rc "$P" --root "$R" rollback --yes
[[ $RC -eq 0 ]] || fail "rollback after the killed apply: exit $RC: $(head -2 "$T/err")"
[[ ! -e $R/var/lib/passthru/network-confirm.pending ]] || fail "rollback left the stale network-confirm.pending"
# and a handshake left by hand (or by an older passthru) is no confirmation either
printf 'token=abc\ndeadline=99999999999\n' > "$R/var/lib/passthru/network-confirm.pending"
run_rc "$P" --root "$R" confirm
[[ $RC -eq 1 ]] || fail "confirm after rollback: exit $RC, expected 1 (nothing to confirm): $(cat "$T/out")"
grep -q '^passthru: error: nothing to confirm' "$T/err" || fail "confirm after rollback: not explained: $(head -1 "$T/err")"
grep -q 'confirmed' "$T/out" && fail "confirm after rollback reported success"
[[ ! -e $R/var/lib/passthru/network-confirm.ok ]] || fail "confirm wrote network-confirm.ok for nobody"
section_ok "after a rollback, confirm says there is nothing to confirm (exit 1); rollback removes the stale handshake"

# --- Medium: terminal escapes in host data -----------------------------------
# A VM description (any PVE user with VM.Config rights can set it) and a
# driver name from sysfs carried ESC[2K and CR to the terminal raw: one could
# hide a line of the reviewed diff. Human output shows them escaped; JSON
# carries the exact value.
section_start
R=$T/esc
copy_host epyc-4x2080ti "$R"
esc_desc=$'hidden\e[2K\rshown'
esc_drv=$'evil\e[2K\rx'
own_copy "$R/etc/pve/qemu-server/101.conf"
{ printf 'description: %s\n' "$esc_desc"; cat "$R/etc/pve/qemu-server/101.conf"; } > "$T/101.conf"
cat "$T/101.conf" > "$R/etc/pve/qemu-server/101.conf"
nvme=$(readlink -f "$R/sys/bus/pci/devices/0000:c1:00.0")
mkdir "$R/sys/bus/pci/drivers/$esc_drv"
ln -sfn "../../../../bus/pci/drivers/$esc_drv" "$nvme/driver"
no_raw_esc() { # FILE WHAT: no ESC, CR or other C0 control but newline and tab in FILE
    if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$1"; then
        fail "$2: raw control characters reach the terminal: $(LC_ALL=C grep -a $'[\x01-\x08\x0b-\x1f\x7f]' "$1" | head -2 | cat -v)"
    fi
}
for cmd in "scan" "plan --vm 101 --gpus all" "apply --vm 101 --gpus all --yes" "history" "verify --vm 101" "rollback --yes"; do
    # shellcheck disable=SC2086
    run_rc "$P" --root "$R" --color never $cmd
    crashed "$RC" && fail "escapes: '$cmd' crashed (exit $RC)"
    no_raw_esc "$T/out" "'$cmd' (stdout)"
    no_raw_esc "$T/err" "'$cmd' (stderr)"
done
run_rc "$P" --root "$R" --color never scan
grep -qF 'evil\e[2K\rx' "$T/out" || fail "scan does not show the driver name escaped: $(grep -a c1:00.0 "$T/out" | cat -v)"
run_rc "$P" --root "$R" --color never plan --vm 101 --gpus all
grep -qF 'description: hidden\e[2K\rshown' "$T/out" || fail "plan does not show the description escaped"
# --color always: the tool's own colour, and no other escape
run_rc "$P" --root "$R" --color always plan --vm 101 --gpus all
LC_ALL=C grep -q $'\e\\[' "$T/out" || fail "--color always: no colour in the plan"
! LC_ALL=C grep -q $'\e\\[2K\|\r' "$T/out" || fail "--color always: the host's ESC[2K or CR reached the terminal"
# JSON: the exact value
[[ $("$P" --root "$R" scan --json | jq -r '.. | objects | select(.address? == "0000:c1:00.0") | .driver') == "$esc_drv" ]] \
    || fail "scan --json does not carry the driver name exactly"
"$P" --root "$R" plan --vm 101 --gpus all --json 2> /dev/null | jq -r '.. | strings' > "$T/strings"
grep -qF "description: $esc_desc" "$T/strings" || fail "plan --json does not carry the description exactly"
section_ok "control characters in a VM description and a sysfs driver name are escaped in human output, exact in JSON"

# --- Medium: host strings checked against their grammar before rendering -----
# A driver name with a newline (a sysfs link name) became an `install` line
# of its own in /etc/modprobe.d/passthru-vfio.conf.
section_start
R=$T/grammar
copy_host epyc-4x2080ti "$R"
evil=$'nouveau\ninstall vfio_pci touch pwned'
gpu=$(readlink -f "$R/sys/bus/pci/devices/0000:41:00.0")
mkdir "$R/sys/bus/pci/drivers/$evil"
ln -sfn "../../../../bus/pci/drivers/$evil" "$gpu/driver"
before=$(tree_sum "$R")
run_rc "$P" --root "$R" plan --vm 101 --gpus all
[[ $RC -eq 3 ]] || fail "a driver name with a newline: plan exit $RC, expected 3 (refused)"
grep -qF "passthru: error: refused: will not write /etc/modprobe.d/passthru-vfio.conf: the host driver module 'nouveau\\ninstall vfio_pci touch pwned' is not a module name" "$T/err" \
    || fail "no clear refusal: $(head -3 "$T/err")"
run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 3 ]] || fail "a driver name with a newline: apply exit $RC, expected 3"
[[ $(tree_sum "$R") == "$before" ]] || fail "the refused apply wrote something"
! grep -rqs '^install vfio_pci touch' "$R/etc" || fail "the driver name became an install line"
section_ok "a driver name with a newline is refused (exit 3, one line), nothing written"

# --- Medium: temporary files of an interrupted write -------------------------
# A kill -9 between writing ".NAME.passthru-N" and renaming it onto NAME left
# it (and the directory apply created for it) behind: rollback never removed
# them, so the tree was not byte-identical.
section_start
need_fault_hook
R=$T/tmpfiles
copy_host epyc-4x2080ti "$R"
S0=$(tree_sum "$R")
# (a) what a kill right after the temporary file was written leaves: the
# apply stopped at the write of grub.d/passthru.cfg, with its temporary file.
copy_host epyc-4x2080ti "$T/trace-root"
PASSTHRU_TEST_FAULT_TRACE=1 "$PF" --root "$T/trace-root" apply --vm 101 --gpus all --yes > /dev/null 2> "$T/trace" || true
n_write=$(grep -m1 ' write /etc/default/grub.d/passthru.cfg$' "$T/trace" | cut -d' ' -f2)
[[ -n $n_write ]] || fatal "no write of /etc/default/grub.d/passthru.cfg among the fault points"
run_rc env PASSTHRU_TEST_FAULT=kill@$n_write "$PF" --root "$R" apply --vm 101 --gpus all --yes
[[ $RC -eq 137 ]] || fail "kill@$n_write: exit $RC, expected 137"
printf 'GRUB_CMDLINE_LINUX_DEFAULT="$GRUB_CMDLINE_LINUX_DEFAULT iommu=pt"\n' > "$R/etc/default/grub.d/.passthru.cfg.passthru-123456"
run_rc "$P" --root "$R" rollback --yes
[[ $RC -eq 0 ]] || fail "rollback after a planted temporary file: exit $RC: $(head -3 "$T/err")"
[[ $(tree_sum "$R") == "$S0" ]] || fail "rollback left the temporary file (or its directory): $(ls -A "$R/etc/default/grub.d" 2>&1)"
# (b) a real kill -9 between the temporary file and the rename, for every
# file apply writes under /etc
for n in $(grep ' rename /etc/' "$T/trace" | cut -d' ' -f2); do
    what=$(grep "^fault-point $n " "$T/trace" | cut -d' ' -f3-)
    copy_host epyc-4x2080ti "$R"
    run_rc env PASSTHRU_TEST_FAULT=kill@$n "$PF" --root "$R" apply --vm 101 --gpus all --yes
    [[ $RC -eq 137 ]] || fail "kill@$n ($what): exit $RC, expected 137"
    ls -A "$R$(dirname "${what#rename }")" | grep -q '\.passthru-[0-9]*$' || fail "kill@$n ($what): no temporary file to test with"
    run_rc "$P" --root "$R" rollback --yes
    [[ $RC -eq 0 ]] || fail "kill@$n ($what): rollback exit $RC: $(head -3 "$T/err")"
    [[ $(tree_sum "$R") == "$S0" ]] || fail "kill@$n ($what): the tree is not byte-identical after rollback (temporary files included)"
done
grep -q ' rename /etc/' "$T/trace" || fail "no rename fault point among the writes under /etc"
section_ok "a kill -9 between a temporary file and its rename: rollback removes it and the directory apply made, byte-identical"

# --- An admin's template override that does not parse ----------------------
# Every template a host room renders (plan/planner.hpp: render_or_refuse) can be
# overridden in /etc/passthru/templates; one that does not parse refuses the
# plan (exit 3) with the template's name and the parser's word, and apply
# writes nothing.
section_start
for t in modprobe-vfio.conf modules-load-vfio.conf grub-passthru.cfg initramfs-modules; do
    copy_host epyc-4x2080ti "$R"
    mkdir -p "$R/etc/passthru/templates"
    printf '{{#unclosed}}\n' > "$R/etc/passthru/templates/$t.mustache"
    S0=$(tree_sum --with-journal "$R")
    run_rc "$P" --root "$R" plan --vm 101 --gpus all
    [[ $RC -eq 3 ]] || fail "$t: a broken override: plan exit $RC, expected 3"
    grep -q "^passthru: error: refused: template /etc/passthru/templates/$t.mustache .*Unclosed section" "$T/err" ||
        fail "$t: a broken override: no refusal naming it: $(head -3 "$T/err")"
    run_rc "$P" --root "$R" apply --vm 101 --gpus all --yes
    [[ $RC -eq 3 ]] || fail "$t: a broken override: apply exit $RC, expected 3"
    [[ $(tree_sum --with-journal "$R") == "$S0" ]] || fail "$t: a broken override: apply changed the tree"
done
section_ok "a template override that does not parse (each host room's): plan and apply refuse with its name (exit 3), nothing written"

finish "hostile input"
