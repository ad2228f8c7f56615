#!/usr/bin/env bash
# Bond/bridge plans on a copy of the EPYC fixture host:
#  - the seed's request, applied under --root, stages interfaces.new equal to
#    the hand-written golden file;
#  - every generated file passes Debian's ifupdown2 parser (ifquery -i FILE -a,
#    never installed on this machine: unpacked with apt-get download + dpkg -x into
#    .cache/, or PASSTHRU_TEST_CACHE; inside a test root of its own (the Debian 13
#    half) the root's installed ifupdown2, whose files are only read) with
#    addon_syntax_check=1, and the independent PVE rules check (network_pve_rules.py);
#  - bad input exits 2 and writes nothing; --apply-network over the default route
#    without --confirm-timeout exits 3;
#  - the lock-out guard: without `passthru confirm` the previous file is back and
#    ifreload -a was recorded twice; with it the new file stays.
source "$(dirname "$0")/lib.inc"
need_binary
src=$SRC
bin=$P
host="$src/tests/fixtures/hosts/epyc-4x2080ti"
[[ -f "$host/etc/network/interfaces" ]] || skip "$host has no etc/network/interfaces"

# --- Debian's ifupdown2, unpacked (never installed: it replaces the machine's networking) ---
cache="${PASSTHRU_TEST_CACHE:-$src/.cache}/ifupdown2"
pkg=$cache/root
if [[ -n ${PASSTHRU_TEST_IN_ROOT:-} && -f /usr/share/ifupdown2/__main__.py ]]; then
    pkg=""
elif [[ ! -f "$cache/root/usr/share/ifupdown2/__main__.py" ]]; then
    mkdir -p "$cache"
    if ! (cd "$cache" && apt-get download ifupdown2 >/dev/null 2>&1 && dpkg -x ifupdown2_*.deb root); then
        skip "cannot fetch ifupdown2 with apt-get download"
    fi
fi
python=/usr/bin/python3
[[ -x $python ]] || python=$(command -v python3)
mkdir -p "$cache/bin"
sed 's/^addon_syntax_check=0/addon_syntax_check=1/' "$pkg/etc/network/ifupdown2/ifupdown2.conf" > "$cache/ifupdown2.conf"
grep -q '^addon_syntax_check=1' "$cache/ifupdown2.conf"
# ifupdown2 picks its mode from argv[0] and reads its config from a fixed
# path: the launcher sets both, so nothing under /etc is read or written.
cat > "$cache/bin/ifquery" <<EOF
#!$python
import sys
PKG = "$pkg/usr/share/ifupdown2"
sys.path.insert(0, PKG)
import ifupdown.config as config
config.IFUPDOWN2_CONF_PATH = "$cache/ifupdown2.conf"
config.ADDONS_CONF_PATH = "$pkg/etc/network/ifupdown2/addons.conf"
sys.argv[0] = "ifquery"
with open(PKG + "/__main__.py") as f:
    code = compile(f.read(), PKG + "/__main__.py", "exec")
exec(code, {"__name__": "__main__", "__file__": PKG + "/__main__.py"})
EOF
chmod +x "$cache/bin/ifquery"


# ifquery exits 0 even on errors: errors are the "error:" lines on stderr.
# A bridge-fd range warning is not fatal (FACTS §5.3: upstream wants 2-255, PVE writes 0).
ifupdown2_check() {
    local file=$1 out err
    out=$("$cache/bin/ifquery" -i "$file" -a 2>"$T/ifquery.err") || { fail "ifquery crashed on $file"; cat "$T/ifquery.err"; return; }
    err=$(grep -E 'error:|warning:' "$T/ifquery.err" | grep -v 'bridge-fd: value of out range' || true)
    if [[ -n $err ]]; then
        fail "ifupdown2 rejects $file:"; echo "$err"
    fi
    [[ -n $out ]] || fail "ifquery printed nothing for $file"
}

# The checker and ifquery must be able to fail: a file with PVE's pitfalls.
printf 'auto bond0\niface bond0 inet static\n\tbond-ports a b\n\tbond-mode balance-alb\n\tbond-xmit-hash-policy layer2+3\n\tbogus-keyword 1\n' > "$T/bad"
printf 'auto vmbr0\niface vmbr0 inet dhcp\n\taddress 1.2.3.4/24\n\tbridge-ports bond0\n\tbridge-vlan-aware no\n' >> "$T/bad"
if "$python" "$src/tests/integration/network_pve_rules.py" "$T/bad" >/dev/null; then fail "the PVE rules checker accepts a bad file"; fi
"$cache/bin/ifquery" -i "$T/bad" -a >/dev/null 2>"$T/bad.err" || true
grep -q 'error:.*bogus-keyword' "$T/bad.err" || fail "ifquery did not report an unknown keyword (addon_syntax_check off?)"

fresh() { rm -rf "$T/root"; cp -a "$host" "$T/root"; }
seed=(--vm 101 --gpus all --bond enp66s0f0,enp66s0f1 --bond-mode balance-alb --bond-xmit-hash-policy layer2+3
      --address 192.168.1.252/24 --gateway 192.168.1.1)

# 1. The seed's request: staged interfaces.new equals the golden file.
fresh
cp "$host/etc/network/interfaces" "$T/interfaces.orig"
if "$bin" apply --yes --root "$T/root" "${seed[@]}" >"$T/apply.out" 2>&1; then
    if cmp -s "$T/root/etc/network/interfaces.new" "$src/tests/fixtures/network/seed-bond.expected"; then
        ok "seed bond staged as the golden file"
    else
        fail "interfaces.new differs from the golden file"
        diff -u "$src/tests/fixtures/network/seed-bond.expected" "$T/root/etc/network/interfaces.new" || true
    fi
    cmp -s "$T/root/etc/network/interfaces" "$T/interfaces.orig" || fail "staging changed /etc/network/interfaces"
    grep -q 'ignored with bond-mode balance-alb' "$T/apply.out" || fail "no warning about the ignored xmit hash policy"
    ifupdown2_check "$T/root/etc/network/interfaces.new"
    "$python" "$src/tests/integration/network_pve_rules.py" "$T/root/etc/network/interfaces.new" || fail "PVE rules (seed)"
    # Rollback puts the host back: interfaces.new did not exist.
    "$bin" rollback --yes --root "$T/root" >/dev/null 2>&1 || fail "rollback failed"
    [[ ! -e "$T/root/etc/network/interfaces.new" ]] || fail "rollback left interfaces.new behind"
else
    fail "apply of the seed request failed"; cat "$T/apply.out"
fi

# 2. More variants, each through ifupdown2 and the PVE rules.
variants=(
    "--bond enp66s0f0,enp66s0f1 --bond-mode 802.3ad --bond-xmit-hash-policy layer3+4 --vlan-aware"
    "--bond enp66s0f1,enp66s0f0 --bond-mode active-backup --bond-name bond1"
    "--bond enp66s0f0,enp66s0f1 --bond-mode balance-xor --address 192.168.1.10/24 --gateway 192.168.1.254"
    "--bond enp66s0f0,enp66s0f1 --bond-mode broadcast --address fd00:1::2/64 --gateway fd00:1::1"
)
i=0
for v in "${variants[@]}"; do
    i=$((i + 1))
    fresh
    read -r -a args <<<"$v"
    bond=bond0; bridge=vmbr0
    [[ $v == *"--bond-name bond1"* ]] && bond=bond1
    [[ $v == *"--bridge vmbr1"* ]] && bridge=vmbr1
    if "$bin" apply --yes --root "$T/root" --vm 101 --gpus all "${args[@]}" >"$T/v$i.out" 2>&1; then
        f="$T/root/etc/network/interfaces.new"
        ifupdown2_check "$f"
        "$python" "$src/tests/integration/network_pve_rules.py" "$f" --bond "$bond" --bridge "$bridge" || fail "PVE rules (variant $i: $v)"
        ok "variant $i ($v)"
    else
        fail "apply failed for variant $i ($v)"; cat "$T/v$i.out"
    fi
done

# 3. Bad input: exit 2, nothing written.
for bad in "--bond enp66s0f0,eth9" "--bond enp66s0f0,enp66s0f1 --address 192.168.1.252" \
           "--bond enp66s0f0,enp66s0f1 --address 192.168.1.252/24 --gateway 10.0.0.1" \
           "--bond enp66s0f0,enp66s0f1 --bridge enp66s0f0" "--bond enp66s0f0,enp66s0f1 --confirm-timeout 60"; do
    fresh
    read -r -a args <<<"$bad"
    set +e
    "$bin" plan --root "$T/root" --vm 101 --gpus all "${args[@]}" >"$T/bad.out" 2>&1
    rc=$?
    set -e
    [[ $rc -eq 2 ]] || { fail "'$bad' exited $rc, not 2"; cat "$T/bad.out"; }
    grep -q '^passthru: error: ' "$T/bad.out" || fail "'$bad': no 'passthru: error:' line"
    diff -r --no-dereference "$host" "$T/root" >/dev/null 2>&1 || fail "'$bad' changed the root"
done
ok "bad input exits 2"

# A NIC that is a port of another bridge: refused (3), nothing written.
fresh
set +e
"$bin" plan --root "$T/root" --vm 101 --gpus all --bond enp66s0f0,enp66s0f1 --bridge vmbr1 >"$T/other.out" 2>&1
rc=$?
set -e
[[ $rc -eq 3 ]] || { fail "bonding a port of vmbr0 under vmbr1 exited $rc, not 3"; cat "$T/other.out"; }
grep -q 'enp66s0f0 is a port of bridge vmbr0' "$T/other.out" || fail "the refusal does not name vmbr0"

# 4. --apply-network over the default route: refused (3) without --confirm-timeout.
route_vmbr0=$'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\nvmbr0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n'
fresh
mkdir -p "$T/root/proc/net"
printf '%s' "$route_vmbr0" > "$T/root/proc/net/route"
set +e
"$bin" plan --root "$T/root" "${seed[@]}" --apply-network >"$T/refused.out" 2>&1
rc=$?
set -e
[[ $rc -eq 3 ]] || { fail "--apply-network over the default route exited $rc, not 3"; cat "$T/refused.out"; }
grep -q 'default route goes through vmbr0' "$T/refused.out" || fail "refusal does not name the default route"

# 5. The guard under --root: no confirm -> previous file back, ifreload -a recorded twice.
set +e
"$bin" apply --yes --root "$T/root" "${seed[@]}" --apply-network --confirm-timeout 10 >"$T/guard.out" 2>&1
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "an unconfirmed network apply exited $rc, not 1 (rolled back)"
cmp -s "$T/root/etc/network/interfaces" "$T/interfaces.orig" || fail "unconfirmed: the previous interfaces file is not back"
grep -q 'no confirmation within 10 s: restoring the previous network configuration' "$T/guard.out" || fail "unconfirmed: the guard did not restore"
grep -q '\[3/3\] ifreload -a' "$T/guard.out" || fail "unconfirmed: ifreload -a did not run after the files were written"
grep -q 're-running ifreload -a' "$T/guard.out" || fail "unconfirmed: ifreload -a did not run again after the restore"
[[ ! -e "$T/root/var/lib/passthru/network-confirm.pending" ]] || fail "unconfirmed: the handshake file was left behind"
[[ $LIB_FAILED -eq 0 ]] || cat "$T/guard.out"
[[ $LIB_FAILED -eq 0 ]] && ok "unconfirmed apply restored (exit $rc)"

# 6. ... and with `passthru confirm` from elsewhere the new file stays.
fresh
mkdir -p "$T/root/proc/net"
printf '%s' "$route_vmbr0" > "$T/root/proc/net/route"
"$bin" apply --yes --root "$T/root" "${seed[@]}" --apply-network --confirm-timeout 20 >"$T/guard2.out" 2>&1 &
apply_pid=$!
for _ in $(seq 1 100); do
    [[ -f "$T/root/var/lib/passthru/network-confirm.pending" ]] && break
    sleep 0.1
done
"$bin" confirm --root "$T/root" >"$T/confirm.out" 2>&1 || { fail "passthru confirm failed"; cat "$T/confirm.out"; }
set +e
wait "$apply_pid"
rc=$?
set -e
[[ $rc -eq 0 ]] || { fail "confirmed apply exited $rc"; cat "$T/guard2.out"; }
cmp -s "$T/root/etc/network/interfaces" "$src/tests/fixtures/network/seed-bond.expected" || fail "confirmed: the new interfaces file is not in place"
[[ ! -e "$T/root/etc/network/interfaces.new" ]] || fail "confirmed: interfaces.new left behind"
[[ $LIB_FAILED -eq 0 ]] && ok "confirmed apply kept"

# confirm with nothing waiting: a clear error.
set +e
"$bin" confirm --root "$T/root" >"$T/confirm2.out" 2>&1
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "confirm with nothing waiting exited $rc, not 1"
finish "bond and bridge plans pass ifupdown2 and the PVE rules; the lock-out guard restores and keeps"
