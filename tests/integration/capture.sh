#!/usr/bin/env bash
# passthru capture FILE on a copy of the sample host (epyc-4x2080ti) and of every other
# fixture host: the archive, unpacked with tar, is a --root tree on which scan --json and
# plan --json answer as on the original (exactly when nothing is redacted, up to the
# redacted values otherwise); no secret planted in a VM config or /etc/hostname survives in any member,
# nor a secret, address, MAC or foreign node name planted in every file capture packs; and FILE is
# either the whole archive or untouched.
source "$(dirname "$0")/lib.inc"
need_binary
need tar gzip python3

# normalise JSON: tests/support/capture_norm.py (what capture replaces, one word each)
NORM=$SRC/tests/support/capture_norm.py

# plan_args ROOT: a plan request that succeeds on ROOT (its first VM, all GPUs or one);
# the first VM with --gpus all when none does.
plan_args() {
    local root=$1 vm slot
    vm=$(find "$root/etc/pve/qemu-server" -name '*.conf' -printf '%f\n' 2> /dev/null | sort -n | head -1)
    vm=${vm%.conf}
    for slot in all $(python3 -c 'import json,sys; print(" ".join(g["slot"] for g in json.load(open(sys.argv[1]))["gpus"]))' "$root.scan.json"); do
        if "$P" --root "$root" plan --vm "${vm:-101}" --gpus "$slot" --json > /dev/null 2>&1; then
            echo "--vm ${vm:-101} --gpus $slot"
            return
        fi
    done
    echo "--vm ${vm:-101} --gpus all"
}

# orig_answers ORIG: scan --json and plan --json of the original, once per fixture (the plan
# request from plan_args, in ORIG.args), made on a copy so that its pending-plan record
# changes nothing.
orig_answers() {
    local orig=$1
    "$P" --root "$orig" scan --json > "$orig.scan.json" || fail "$orig: scan of the original failed"
    plan_args "$orig" > "$orig.args"
    read -r -a args < "$orig.args"
    rm -rf "$orig.p"
    cp -a "$orig" "$orig.p"
    ORIG_RC=0
    "$P" --root "$orig.p" plan "${args[@]}" --json > "$orig.plan.json" 2> /dev/null || ORIG_RC=$?
}

# same_answers NAME ORIG UNPACKED MODE: scan --json and plan --json of the unpacked capture
# agree with the original's (orig_answers; MODE exact or normalised).
same_answers() {
    local name=$1 orig=$2 un=$3 mode=$4 names args rc_b=0
    names=$(cat "$orig/etc/hostname" 2> /dev/null || true)
    "$P" --root "$un" scan --json > "$un.scan.json" || fail "$name: scan of the capture failed"
    read -r -a args < "$orig.args"
    rm -rf "$un.p"
    cp -a "$un" "$un.p"
    "$P" --root "$un.p" plan "${args[@]}" --json > "$un.plan.json" 2> /dev/null || rc_b=$?
    [[ $ORIG_RC -eq $rc_b ]] || fail "$name: plan ${args[*]} exits $ORIG_RC on the original, $rc_b on the capture"
    local kind
    if [[ $mode == exact ]]; then
        for kind in scan plan; do
            cmp -s "$orig.$kind.json" "$un.$kind.json" || {
                fail "$name: $kind --json differs on the capture ($mode)"
                diff "$orig.$kind.json" "$un.$kind.json" | head -10 >&3
            }
        done
    elif ! python3 "$NORM" --same --name "$names" "$orig.scan.json" "$un.scan.json" "$orig.plan.json" "$un.plan.json" > "$un.diff"; then
        fail "$name: scan or plan --json differs on the capture beyond redacted values"
        cat "$un.diff" >&3
    fi
    if [[ $ORIG_RC -eq 0 ]]; then
        ok "$name: scan and plan ${args[*]} agree ($mode)"
    else
        ok "$name: scan and the refused plan ${args[*]} agree ($mode)"
    fi
}

# --- the round trip on every fixture host (the sample host among them) -------------------
# PASSTHRU_CAPTURE_HOSTS, when set, names the fixtures the round trip runs on instead of
# all of them: scripts/test-sanitize.sh runs a subset that still reaches every kind of
# member and redaction (the full round trip runs in the main suite).
[[ -d $FIXTURES/epyc-4x2080ti ]] || fatal "the sample host tests/fixtures/hosts/epyc-4x2080ti is missing"
read -r -a ROUND_TRIP <<< "${PASSTHRU_CAPTURE_HOSTS-}"
if ((${#ROUND_TRIP[@]} == 0)); then
    ROUND_TRIP=()
    for dir in "$FIXTURES"/*/; do
        ROUND_TRIP+=("$(basename "$dir")")
    done
fi
for name in "${ROUND_TRIP[@]}"; do
    [[ -d $FIXTURES/$name ]] || fatal "PASSTHRU_CAPTURE_HOSTS names $name, which is no fixture host"
    w=$T/rt/$name
    mkdir -p "$w"
    copy_host "$name" "$w/orig"
    before=$(tree_sum --with-journal "$w/orig")
    "$P" --root "$w/orig" capture "$w/c.tar.gz" > "$w/out" 2> "$w/err" || { fail "$name: capture failed: $(cat "$w/err")"; continue; }
    "$P" --root "$w/orig" capture --keep-hostnames --keep-addresses "$w/k.tar" > /dev/null 2>&1 || fail "$name: capture --keep-* failed"
    [[ $(tree_sum --with-journal "$w/orig") == "$before" ]] || fail "$name: capture changed the root"
    grep -q '^wrote ' "$w/out" || fail "$name: no summary on stdout"
    tar -tzf "$w/c.tar.gz" > "$w/members" || fail "$name: tar cannot list the capture"
    if grep -Eq '^/|(^|/)\.\.(/|$)' "$w/members"; then
        fail "$name: a member names a path outside the tree"
    fi
    grep -qx 'CAPTURE.json' "$w/members" || fail "$name: no CAPTURE.json at the top"
    [[ $(file -b --mime-type "$w/k.tar" 2> /dev/null || echo application/x-tar) == application/x-tar ]] || fail "$name: FILE.tar is compressed"
    mkdir -p "$w/un" "$w/kept"
    tar -xzf "$w/c.tar.gz" -C "$w/un" || fail "$name: tar cannot unpack the capture"
    tar -xf "$w/k.tar" -C "$w/kept" || fail "$name: tar cannot unpack the uncompressed capture"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"] == "passthru.capture/1"' "$w/un/CAPTURE.json" || fail "$name: CAPTURE.json is not a passthru.capture/1 document"
    orig_answers "$w/orig"
    same_answers "$name" "$w/orig" "$w/kept" exact
    same_answers "$name" "$w/orig" "$w/un" normalised
done

# --- planted secrets never survive --------------------------------------------------------
s=$T/secret
copy_host epyc-4x2080ti "$s"
conf=$s/etc/pve/qemu-server/101.conf
own_copy "$conf"
own_copy "$s/etc/hostname"
secrets=(Sup3rS3cretPw AAAAB3NzaC1yc2EplantedKEY tok-Pl4nted-9931 hunter2-api-secret 10.77.66.55 10.77.66.1 2a01:4f8:c0c:1234::abcd
    de:ad:be:ef:12:34 secrethost-7731)
cat >> "$conf" << 'EOF'
cipassword: Sup3rS3cretPw
sshkeys: ssh-rsa%20AAAAB3NzaC1yc2EplantedKEY%20me%40example
ipconfig0: ip=10.77.66.55/24,gw=10.77.66.1,ip6=2a01:4f8:c0c:1234::abcd/64
net1: virtio=DE:AD:BE:EF:12:34,bridge=vmbr0
api_token: tok-Pl4nted-9931
EOF
sed -i 's/^ciuser:.*//' "$conf"
printf 'hookscript_secret: hunter2-api-secret\n' >> "$conf"
printf 'secrethost-7731\n' > "$s/etc/hostname"
printf 'options x y=1\n' > "$s/etc/modprobe.d/latin1-$(printf '\xe9').conf" # a name that is not UTF-8: skipped, noted
"$P" --root "$s" capture "$T/secret.tar.gz" > /dev/null || fatal "capture of the planted host failed"
mkdir -p "$T/secret.un"
tar -xzf "$T/secret.tar.gz" -C "$T/secret.un"
gzip -dc "$T/secret.tar.gz" > "$T/secret.tar"
for v in "${secrets[@]}"; do
    if grep -Fqai -- "$v" "$T/secret.tar" || grep -rFqai -- "$v" "$T/secret.un"; then
        fail "planted value $v survives in the capture"
    else
        ok "planted value $v is gone"
    fi
done
if grep -qF '"/etc/modprobe.d/latin1-\\xe9.conf"' "$T/secret.un/CAPTURE.json" && [[ ! -e $T/secret.un/etc/modprobe.d/latin1-$'\xe9'.conf ]]; then
    ok "a file name that is not UTF-8 is skipped and named in CAPTURE.json"
else
    fail "the file name that is not UTF-8 is not skipped and noted: $(grep -A3 skipped "$T/secret.un/CAPTURE.json")"
fi
un_conf=$T/secret.un/etc/pve/qemu-server/101.conf
if grep -Eq '^ipconfig0: ip=(192\.0\.2|198\.51\.100|203\.0\.113)\.55/24,gw=(192\.0\.2|198\.51\.100|203\.0\.113)\.1,ip6=2001:db8:[0-9a-f:]+/64$' "$un_conf"; then
    ok "ipconfig0 keeps its shape and prefix lengths"
else
    fail "ipconfig0 is not redacted as expected: $(grep ipconfig0 "$un_conf")"
fi
if grep -Eq '^net1: virtio=02:00:00:00:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr0$' "$un_conf"; then
    ok "a MAC becomes a locally administered one"
else
    fail "net1 is not redacted as expected: $(grep net1 "$un_conf")"
fi
if grep -q '^cipassword: redacted$' "$un_conf"; then
    ok "cipassword is redacted"
else
    fail "cipassword line missing"
fi
if [[ $(cat "$T/secret.un/etc/hostname") == node1 ]]; then
    ok "the host name becomes node1"
else
    fail "/etc/hostname is not node1"
fi
if grep -q '"kind": "secret"' "$T/secret.un/CAPTURE.json" && ! grep -Fq Sup3rS3cretPw "$T/secret.un/CAPTURE.json"; then
    ok "CAPTURE.json counts the secrets, without their values"
else
    fail "CAPTURE.json does not list the redacted secrets"
fi
if "$P" --root "$T/secret.un" plan --vm 101 --gpus all --json > /dev/null 2>&1; then
    ok "the redacted VM config still parses and plans"
else
    fail "plan fails on the redacted capture"
fi

# --- a planted value in every file capture packs never survives ----------------------------
# A copy of the sample host with the files a cluster node adds (storage.cfg with a CIFS
# password and Ceph monitors, a PCI mapping naming other nodes, corosync's nodelist, a task
# list and a qmstart log, /proc/net as a live host has it: a link to /proc/PID/net), then
# one planted secret, address, MAC and foreign node name in every text file the
# round trip's capture of the sample host packed. None may survive in any member's name
# or bytes.
pl=$T/planted
cp -a "$FIXTURES/epyc-4x2080ti" "$pl" # a copy of its own: every file is edited
mkdir -p "$pl/etc/pve/mapping" "$pl/var/log/pve/tasks/5" "$pl/proc/4242/net"
cat > "$pl/etc/pve/storage.cfg" << 'CFG'
dir: local
	path /var/lib/vz
	content iso,vztmpl,backup

lvmthin: local-lvm
	thinpool data
	vgname pve
	content rootdir,images

cifs: share
	server 10.66.1.20
	share backups
	username admin
	password CifsPl4ntedPw
	content backup
	nodes pve,fn-alpha

rbd: ceph
	monhost 10.66.2.11 10.66.2.12;10.66.2.13
	pool rbd
	username admin
	content images
CFG
cat > "$pl/etc/pve/mapping/pci.cfg" << 'CFG'
gpu
	map id=10de:1e04,node=fn-beta,path=0000:41:00.0
	map id=10de:1e04,node=pve,path=0000:41:00.0
CFG
cat > "$pl/etc/pve/corosync.conf" << 'CFG'
nodelist {
  node {
    name: pve
    ring0_addr: 10.66.3.1
  }
  node {
    name: fn-gamma
    ring0_addr: 10.66.3.2
  }
}
CFG
upid='UPID:fn-delta:0000A1B2:00C3D4E5:6543210F:qmstart:101:alice@pve:'
printf '%s 6543211A start failed: QEMU exited with code 1\n' "$upid" > "$pl/var/log/pve/tasks/index"
printf 'kvm: connect to 10.66.4.4 2a01:4f8:66:4::1234:5678 failed\nTASK ERROR: start failed\n' > "$pl/var/log/pve/tasks/5/$upid"
printf 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\nvmbr0\t00000000\t0105420A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n' > "$pl/proc/4242/net/route"
printf '2a0104f8006600050000000000000001 80 00000000000000000000000000000000 00 fe80000000000000a1b2c3fffed4e5f6 00000400 00000001 00000000 00000003 vmbr0\n' > "$pl/proc/4242/net/ipv6_route"
printf '2a0104f800660006a1b2c3fffed4e5f7 02 40 00 80 vmbr0\n' > "$pl/proc/4242/net/if_inet6"
ln -s 4242 "$pl/proc/self"
ln -s self/net "$pl/proc/net"
planted=(CifsPl4ntedPw 10.66.1.20 10.66.2.11 10.66.2.12 10.66.2.13 fn-alpha fn-beta fn-gamma fn-delta 10.66.3.1 10.66.3.2 10.66.4.4
    2a01:4f8:66:4: 0105420A 2a0104f800660005 2a0104f800660006)
# every text file the sample host's capture packed (its unpacked --keep-* capture of the
# round trip; made here when the round trip left the sample host out)
if [[ ! -d $T/rt/epyc-4x2080ti/kept ]]; then
    mkdir -p "$T/rt/epyc-4x2080ti/kept"
    "$P" --root "$pl" capture --keep-hostnames --keep-addresses "$T/rt/epyc-4x2080ti/k.tar" > /dev/null
    tar -xf "$T/rt/epyc-4x2080ti/k.tar" -C "$T/rt/epyc-4x2080ti/kept"
fi
n=0
while IFS= read -r -d '' f; do
    rel=${f#"$T/rt/epyc-4x2080ti/kept"}
    case $rel in /CAPTURE.json | */config | */rom | */vpd | */resource*) continue ;; esac
    [[ -f $pl$rel && -s $pl$rel ]] || continue
    n=$((n + 1))
    printf -v v6 '2a01:4f8:99:%x:' "$n"
    printf -v mac 'de:ad:be:ef:%02x:%02x' $((n / 256)) $((n % 256))
    printf '\ndb_password=Pw%dq\napi_token: Tk%dq\n\tsecret Sc%dq\nserver 10.%d.%d.77 gw6 %s:abcd hw %s node=fn%dq\n' \
        "$n" "$n" "$n" $((n / 256 + 1)) $((n % 256)) "$v6" "$mac" "$n" >> "$pl$rel"
    planted+=("Pw${n}q" "Tk${n}q" "Sc${n}q" "10.$((n / 256 + 1)).$((n % 256)).77" "$v6" "$mac" "fn${n}q")
    printf '  node {\n    name: fn%dq\n  }\n' "$n" >> "$pl/etc/pve/corosync.conf"
done < <(find "$T/rt/epyc-4x2080ti/kept" -type f -print0)
((n > 20)) || fail "only $n files to plant in: the round trip's capture of the sample host is missing"
"$P" --root "$pl" capture "$T/planted.tar.gz" > /dev/null 2> "$T/planted.err" || fail "capture of the planted host failed: $(cat "$T/planted.err")"
if python3 - "$T/planted.tar.gz" "${planted[@]}" > "$T/planted.out" << 'PY'; then
import re, sys, tarfile
blob, packed = [], set()
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        blob.append(m.name.encode() + b"\0" + m.linkname.encode())
        packed.add(m.name)
        if m.isfile():
            blob.append(t.extractfile(m).read())
blob = b"\n".join(blob).lower()
# one pass per family of planted values (a search per value would take seconds)
families = rb"(?:pw|tk|sc|fn)\d+q|2a01:4f8:99:[0-9a-f]+:|de:ad:be:ef:[0-9a-f]{2}:[0-9a-f]{2}|(?<![\d.])10\.\d+\.\d+\.77(?![\d.])"
found = {m.decode() for m in re.findall(families, blob)}
left = [v for v in sys.argv[2:] if v.lower() in found or (not re.fullmatch(families, v.lower().encode()) and v.lower().encode() in blob)]
for name in ("etc/pve/storage.cfg", "var/log/pve/tasks/index", "proc/4242/net/route",
             "proc/4242/net/ipv6_route", "proc/4242/net/if_inet6"):
    if name not in packed:
        print("not packed:", name)
        left.append(name)
print("survive:", " ".join(left))
sys.exit(1 if left else 0)
PY
    ok "none of ${#planted[@]} values planted in $n packed files and the cluster's files survives"
else
    fail "planted values survive the capture: $(cat "$T/planted.out")"
fi
mkdir -p "$T/planted.un"
tar -xzf "$T/planted.tar.gz" -C "$T/planted.un"
if grep -q '^	vgname pve$' "$T/planted.un/etc/pve/storage.cfg" && grep -q 'alice@pve:' "$T/planted.un/var/log/pve/tasks/index"; then
    ok "a volume group and a realm spelt like the host keep their names"
else
    fail "vgname or the realm was taken for the host name: $(grep vgname "$T/planted.un/etc/pve/storage.cfg") $(cat "$T/planted.un/var/log/pve/tasks/index")"
fi

# --- FILE: refused, failing and closed outputs leave nothing behind -----------------------
h=$T/hostile
mkdir -p "$h/out"
copy_host qemu-intel "$h/root"
one_line() { # one_line WANT_RC FILE CMD...: exit WANT_RC, one line on stderr, FILE untouched
    local want=$1 file=$2 rc=0 before=absent
    shift 2
    [[ -e $file ]] && before=$(sha256sum < "$file")
    "$@" > "$h/stdout" 2> "$h/stderr" || rc=$?
    local now=absent
    [[ -e $file ]] && now=$(sha256sum < "$file")
    [[ $rc -eq $want ]] || fail "expected exit $want, got $rc: $*: $(cat "$h/stderr")"
    [[ $(grep -c '^passthru: error:' "$h/stderr") -eq 1 ]] || fail "not one error line: $*: $(cat "$h/stderr")"
    [[ $now == "$before" ]] || fail "$file changed: $*"
}
one_line 1 "$h/missing/c.tar.gz" "$P" --root "$h/root" capture "$h/missing/c.tar.gz"
[[ ! -e $h/missing ]] || fail "capture made the missing directory"
echo keep > "$h/out/exists.tar.gz"
one_line 3 "$h/out/exists.tar.gz" "$P" --root "$h/root" capture "$h/out/exists.tar.gz"
grep -q 'force' "$h/stderr" || fail "the refusal does not name --force"
if "$P" --root "$h/root" capture --force "$h/out/exists.tar.gz" > /dev/null && tar -tzf "$h/out/exists.tar.gz" > /dev/null; then
    ok "--force replaces FILE with a whole archive"
else
    fail "--force did not replace FILE"
fi
echo notadir > "$h/out/plain"
one_line 1 "$h/out/plain/c.tar.gz" "$P" --root "$h/root" capture "$h/out/plain/c.tar.gz"
ln -s "$h/out/elsewhere" "$h/out/link.tar.gz"
one_line 3 "$h/out/link.tar.gz" "$P" --root "$h/root" capture --force "$h/out/link.tar.gz"
[[ ! -e $h/out/elsewhere ]] || fail "capture wrote through a symlink"
rc=0
"$P" --root "$h/root" capture "$h/out/closed.tar.gz" >&- 2> "$h/stderr" || rc=$?
if [[ $rc -eq 1 && $(grep -c '^passthru: error:.*standard output' "$h/stderr") -eq 1 && ! -e $h/out/closed.tar.gz ]]; then
    ok "a closed stdout: one error line, exit 1, no archive"
else
    fail "closed stdout: exit $rc: $(cat "$h/stderr")"
fi
if [[ $(id -u) -ne 0 ]]; then
    mkdir -p "$h/ro"
    chmod 555 "$h/ro"
    one_line 1 "$h/ro/c.tar.gz" "$P" --root "$h/root" capture "$h/ro/c.tar.gz"
    chmod 755 "$h/ro"
fi
expect_rc 2 "$P" --root "$h/root" capture 2> /dev/null
leftover=$(find "$h/out" -mindepth 1 -not -name exists.tar.gz -not -name plain -not -name link.tar.gz)
[[ -z $leftover ]] || fail "capture left files behind: $leftover"
finish "capture: every fixture round-trips, no planted secret survives, FILE is whole or untouched"
