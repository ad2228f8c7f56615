#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Ansible collection (ansible/ansible_collections/vfio/passthru), built with ansible-galaxy
# and installed, drives passthru on a three-node cluster: Debian's ansible-playbook runs the
# docs' playbook (docs/ansible/site.yml with its group_vars and host_vars, shown in
# docs/ansible.md) against copies of three fixture hosts, connection: local, each with its own
# --root. Only the inventory is the test's (the roots, local connection) and the reboot is off
# (-e passthru_reboot=false: a fixture tree cannot reboot). /etc/pve is one cluster file system
# on every node, so the playbook runs in a private mount namespace where one directory is
# bind-mounted on every root's etc/pve/mapping. Checked (ansible_check.py): the docs show
# exactly these files; check mode reports the changes with diffs and writes nothing; the real
# run changes exactly the files of each node's plan; the consumer board is refused with
# passthru's own error line and rc 3 while the others succeed; the mapping passes
# pve_conf_check.py and lists every safe node's cards, which passthru --mapping then finds;
# a second run changes nothing; state=absent restores every tree byte for byte.
source "$(dirname "$0")/lib.inc"
need_binary
need ansible-playbook ansible-galaxy unshare python3
if [[ $(id -u) -eq 0 ]]; then
    NS=(unshare --mount --propagation private)
else
    NS=(unshare --user --map-root-user --mount --propagation private)
fi
"${NS[@]}" true 2> /dev/null || skip "cannot make a mount namespace here"
CHECK=(python3 "$SRC/tests/integration/ansible_check.py")
NODES=(gpu1 gpu2 gpu3)
declare -A FIXTURE=([gpu1]=epyc-4x2080ti [gpu2]=t180-4xv100 [gpu3]=consumer-shared)
declare -A VMID=([gpu1]=101 [gpu2]=102 [gpu3]=103)

# The docs page shows the playbook, inventory and variables this test runs.
"${CHECK[@]}" docs "$SRC/docs/ansible.md" "$SRC/docs/ansible" > "$T/docs.out" || fail "docs: $(cat "$T/docs.out")"

# The collection as a user gets it: built, then installed from the tarball (offline).
ansible-galaxy collection build "$SRC/ansible/ansible_collections/vfio/passthru" --output-path "$T/dist" > "$T/build.out" 2>&1 ||
    fatal "ansible-galaxy collection build: $(cat "$T/build.out")"
ansible-galaxy collection install "$T"/dist/vfio-passthru-*.tar.gz -p "$T/collections" > "$T/install.out" 2>&1 ||
    fatal "ansible-galaxy collection install: $(cat "$T/install.out")"
ok "collection built and installed"

# Three nodes of one cluster: distinct node names and VM ids (the docs' host_vars).
mkdir -p "$T/pmxcfs" "$T/home"
{
    echo "gpu_nodes:"
    echo "  hosts:"
    for n in "${NODES[@]}"; do
        copy_host "${FIXTURE[$n]}" "$T/$n"
        rm "$T/$n/etc/hostname" && echo "$n" > "$T/$n/etc/hostname"
        if [[ ${VMID[$n]} != 101 ]]; then
            mv "$T/$n/etc/pve/qemu-server/101.conf" "$T/$n/etc/pve/qemu-server/${VMID[$n]}.conf"
        fi
        mkdir -p "$T/$n/etc/pve/mapping"
        echo "    $n: {ansible_connection: local, ansible_python_interpreter: /usr/bin/python3, passthru_root: '$T/$n'}"
    done
} > "$T/inventory.yml"
for n in "${NODES[@]}"; do
    cp -a "$T/$n" "$T/start-$n"
done

# play NAME ARGS...: the docs' playbook in the namespace; its output in $T/NAME.out, every task
# result in $T/NAME.json (ansible_callback/results_json.py), the exit status in $T/NAME.rc.
play() {
    local name=$1
    shift
    local rc=0
    env HOME="$T/home" ANSIBLE_CONFIG="$T/none.cfg" ANSIBLE_COLLECTIONS_PATH="$T/collections" \
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=0 ANSIBLE_LOCAL_TEMP="$T/home/tmp" ANSIBLE_REMOTE_TEMP="$T/home/rtmp" \
        ANSIBLE_CALLBACK_PLUGINS="$SRC/tests/integration/ansible_callback" ANSIBLE_CALLBACKS_ENABLED=results_json \
        PASSTHRU_ANSIBLE_RESULTS="$T/$name.json" ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_FORCE_COLOR=0 \
        "${NS[@]}" bash -c 'T=$1; shift; for n in gpu1 gpu2 gpu3; do mount --bind "$T/pmxcfs" "$T/$n/etc/pve/mapping"; done; exec "$@"' \
        - "$T" ansible-playbook -i "$T/inventory.yml" "$SRC/docs/ansible/site.yml" \
        -e passthru_reboot=false -e "passthru_binary=$P" "$@" > "$T/$name.out" 2>&1 || rc=$?
    echo "$rc" > "$T/$name.rc"
}

# checked NAME MSG ARGS...: ansible_check.py ARGS; ok MSG when it finds nothing wrong.
checked() {
    local name=$1 msg=$2
    shift 2
    if "${CHECK[@]}" "$@" > "$T/$name.chk" 2>&1; then
        ok "$msg"
    else
        fail "$name: $(cat "$T/$name.chk")"
    fi
}

sums() {
    local n
    for n in "${NODES[@]}"; do
        echo "$n $(tree_sum "$@" "$T/$n")"
    done
    echo "pmxcfs $(tree_sum "$T/pmxcfs")"
}
sums > "$T/sums.start"
sums --with-journal > "$T/sums.start.journal"

# gpu3's refusal as passthru itself words it.
expect_rc 3 "$P" --root "$T/gpu3" plan --vm 103 --gpus all --mapping gtx1060 --out "$T/refused.json" > /dev/null 2> "$T/refusal.err"
grep -m1 '^passthru: error: ' "$T/refusal.err" > "$T/refusal.line" || fail "passthru printed no error line for gpu3"

play check --check --diff
sums --with-journal > "$T/sums.check"
diff -u "$T/sums.start.journal" "$T/sums.check" > /dev/null || fail "check mode wrote to a tree: $(diff "$T/sums.start.journal" "$T/sums.check")"
checked check "check mode: changes reported with diffs, nothing written" check "$T"

play apply --diff
checked apply "apply: each node changed exactly its plan, gpu3 refused, the mapping holds every safe card" apply "$T" "$SRC/tests/integration/pve_conf_check.py"

sums --with-journal > "$T/sums.applied"
play again
sums --with-journal > "$T/sums.again"
diff -u "$T/sums.applied" "$T/sums.again" > /dev/null || fail "the second run wrote: $(diff "$T/sums.applied" "$T/sums.again")"
checked again "second run: no change" again "$T"

play absent -e passthru_state=absent --diff
sums > "$T/sums.absent"
diff -u "$T/sums.start" "$T/sums.absent" > /dev/null || fail "state=absent left the trees changed: $(diff "$T/sums.start" "$T/sums.absent")"
checked absent "state=absent: the applied nodes rolled back, the mapping removed, every tree as before" absent "$T"
play absent2 -e passthru_state=absent
checked absent2 "state=absent again: no change" absent2 "$T"

finish "ansible_playbook: check, apply, refusal, mapping, idempotence and rollback on three nodes"
