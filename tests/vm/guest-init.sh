#!/bin/sh
# /init of the passthru real-kernel test guest (PID 1). /bin/sh is dash, as on Debian; every
# other command is a busybox applet or kmod's tool found in PATH.
#
# Runs a fixed sequence of steps against the real Debian kernel, sends every step's stdout,
# stderr and exit code to the host over the serial console, and powers off. The host
# (tests/vm/run.sh + check.py) decides what is right: this script asserts nothing and
# does not know which IOMMU variant it runs under.
#
# Serial protocol (one record per line, base64 wraps at 76 columns):
#   @@PT:LOG <text>            progress, for humans
#   @@PT:FILE <name>           start of a base64 block holding the file <name>
#   @@PT:EOF <name>            end of that block
#   @@PT:DONE                  the sequence finished (missing = the guest died or hung)

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
umask 022
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /run /var/log /root
# Keep printk off the console: it would interleave with the base64 blocks. The full log
# is still in the ring buffer and is sent at the end.
dmesg -n 1

OUT=/tmp/out
mkdir -p "$OUT"
say() {
    read -r up _ </proc/uptime
    echo "@@PT:LOG [$up] $*"
}
send() { # send FILE [NAME]
    echo "@@PT:FILE ${2:-${1##*/}}"
    base64 "$1"
    echo "@@PT:EOF ${2:-${1##*/}}"
}
# step NAME CMD...: run CMD, keep and send its stdout, stderr and exit code.
step() {
    name=$1
    shift
    say "step $name: $*"
    "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" </dev/null
    rc=$?
    echo "$rc" >"$OUT/$name.rc"
    say "step $name rc=$rc"
    send "$OUT/$name.out"
    send "$OUT/$name.err"
    send "$OUT/$name.rc"
    return 0
}

# One line per PCI function: address, bound driver (or -), driver_override (or -).
drivers() {
    for d in /sys/bus/pci/devices/*; do
        drv=-
        if [ -L "$d/driver" ]; then
            cd -P "$d/driver" && drv=${PWD##*/}
            cd /
        fi
        ov=-
        [ -r "$d/driver_override" ] && read -r ov <"$d/driver_override"
        [ "$ov" = "(null)" ] && ov=-
        echo "${d##*/} $drv $ov"
    done
}

# One line per IOMMU group: number, then its devices.
groups() {
    for g in /sys/kernel/iommu_groups/*; do
        [ -d "$g/devices" ] || continue
        line=${g##*/}
        for dev in "$g"/devices/*; do line="$line ${dev##*/}"; done
        echo "$line"
    done
}

load_host_drivers() {
    rc=0
    # Drivers of the emulated devices. The card's host drivers are bochs (display) and
    # snd_hda_intel (audio), exactly as on a host before passthrough is set up.
    for m in e1000e e1000 virtio_pci virtio_net nvme ahci xhci_pci i2c_i801 lpc_ich \
        snd_hda_intel bochs; do
        modprobe "$m" || { echo "modprobe $m failed" >&2; rc=1; }
    done
    # snd_hda_intel probes its codecs asynchronously; give it a moment so the state
    # recorded next is settled.
    sleep 1
    return $rc
}

# Simulate the module loading of the next boot for the card: start from the state a boot
# starts from (no driver_override anywhere, vfio-pci and the card's host drivers not
# loaded), then let real kmod modprobe load the host drivers and vfio-pci with the
# modprobe.d files apply wrote. Whatever apply did live cannot help here.
reload_drivers() {
    rc=0
    echo "== before unload"
    drivers
    for d in /sys/bus/pci/devices/*; do
        [ -w "$d/driver_override" ] && echo >"$d/driver_override"
    done
    if [ -d /sys/module/vfio_pci ]; then
        echo "vfio_pci was loaded: unloading it"
        rmmod vfio_pci || { echo "rmmod vfio_pci failed" >&2; rc=1; }
    fi
    rmmod snd_hda_intel || { echo "rmmod snd_hda_intel failed" >&2; rc=1; }
    rmmod bochs || { echo "rmmod bochs failed" >&2; rc=1; }
    echo "== after unload"
    drivers
    for m in snd_hda_intel bochs vfio-pci; do
        modprobe "$m" || { echo "modprobe $m failed" >&2; rc=1; }
    done
    sleep 1
    echo "== after reload"
    drivers
    return $rc
}

# verify while another process holds the card's VFIO group open, as a running VM's QEMU
# does: the group's open answers EBUSY, and verify should name the holder. The holder is a
# busybox sleep with the group node open on descriptor 9, ended afterwards.
verify_busy() {
    cd -P /sys/bus/pci/devices/0000:04:00.0/iommu_group 2>/dev/null || { echo "the card has no IOMMU group"; return 0; }
    grp=${PWD##*/}
    cd /
    [ -e "/dev/vfio/$grp" ] || { echo "no /dev/vfio/$grp"; return 0; }
    sleep 600 9<>"/dev/vfio/$grp" &
    holder=$!
    sleep 1
    echo "holder pid $holder holds /dev/vfio/$grp"
    passthru verify --vm 101
    rc=$?
    kill "$holder"
    wait "$holder" 2>/dev/null
    return $rc
}

# passthru rom dump of QEMU's std VGA (the boot VGA, whose ROM BAR holds
# vgabios-stdvga.bin): refused while bochs holds it, then read through sysfs once the
# driver is unbound, checked as an option ROM for 1234:1111 and saved. Runs after the
# "after" capture, since it leaves the std VGA without its driver.
rom_dump_vga() {
    vga=
    for d in /sys/bus/pci/devices/*; do
        [ "$(cat "$d/boot_vga" 2>/dev/null)" = 1 ] && vga=${d##*/}
    done
    [ -n "$vga" ] || { echo "no boot VGA"; return 1; }
    echo "boot VGA $vga"
    passthru rom dump "${vga%.*}" /tmp/vga.rom
    echo "held rc=$?"
    echo "$vga" >"/sys/bus/pci/devices/$vga/driver/unbind" || { echo "unbind failed"; return 1; }
    passthru rom dump "${vga%.*}" /tmp/vga.rom
    echo "dump rc=$?"
    echo "saved file: $(od -A n -t x1 -N 2 /tmp/vga.rom 2>/dev/null) bytes=$(wc -c </tmp/vga.rom 2>/dev/null)"
}

# Used only when the image holds no passthru binary (harness smoke test): bind the card's
# two functions to vfio-pci the way the kernel documents (driver_override, unbind, probe).
smoke_bind() {
    modprobe vfio-pci || return 1
    for f in 0000:04:00.0 0000:04:00.1; do
        echo vfio-pci >/sys/bus/pci/devices/$f/driver_override
        [ -L /sys/bus/pci/devices/$f/driver ] && echo $f >/sys/bus/pci/devices/$f/driver/unbind
        echo $f >/sys/bus/pci/drivers_probe
    done
    sleep 1
    drivers
    ls -l /dev/vfio
}

# What changed under /etc since boot (compared with the copy /etc.orig), and what the
# stubs recorded: "==> new|changed|removed PATH" followed by the file's content.
show_changes() {
    cd /etc || return 1
    find . \( -type f -o -type l \) | sort | while read -r f; do
        p=${f#./}
        if [ ! -e "/etc.orig/$p" ] && [ ! -L "/etc.orig/$p" ]; then
            echo "==> new /etc/$p"
            cat "$f"
        elif ! cmp -s "$f" "/etc.orig/$p"; then
            echo "==> changed /etc/$p"
            cat "$f"
        fi
    done
    cd /etc.orig || return 1
    find . \( -type f -o -type l \) | sort | while read -r f; do
        p=${f#./}
        [ -e "/etc/$p" ] || [ -L "/etc/$p" ] || echo "==> removed /etc/$p"
    done
    cd /
    echo "==> stub log"
    [ -f /var/log/passthru-stub.log ] && cat /var/log/passthru-stub.log
    return 0
}

# --- sysfs capture -----------------------------------------------------------------------
# sysfs cannot be tarred (every attribute claims 4096 bytes), so values are copied with
# busybox cp (reads to EOF; one process per directory, since every fork is slow under TCG)
# and symlinks are copied as symlinks (cp -a keeps their relative targets). Write-only
# attributes and /dev/vfio character devices become empty placeholder files.
DEV_ATTRS="vendor device class subsystem_vendor subsystem_device revision config numa_node
 boot_vga current_link_speed current_link_width max_link_speed max_link_width reset_method
 irq enable modalias resource driver_override local_cpulist local_cpus d3cold_allowed
 power_state msi_bus broken_parity_status consistent_dma_mask_bits dma_mask_bits ari_enabled
 secondary_bus_number subordinate_bus_number sriov_totalvfs sriov_numvfs sriov_offset
 sriov_stride sriov_vf_device sriov_drivers_autoprobe label index acpi_index
 driver iommu_group iommu subsystem physfn"
DEV_WRITE_ONLY="remove rescan reset"
DRV_WRITE_ONLY="bind unbind new_id remove_id uevent"

copy_present() { # copy_present SRCDIR DESTDIR NAMES...: cp -a the names that exist
    src=$1
    dst=$2
    shift 2
    mkdir -p "$dst"
    cd "$src" || return 1
    names=
    for a in "$@"; do
        if [ -e "$a" ] || [ -L "$a" ]; then names="$names $a"; fi
    done
    # shellcheck disable=SC2086
    [ -n "$names" ] && cp -a $names "$dst"/
    cd /
}

placeholders() { # placeholders SRCDIR DESTDIR NAMES...
    src=$1
    dst=$2
    shift 2
    for a in "$@"; do
        [ -e "$src/$a" ] && : >"$dst/$a"
    done
}

capture_module() { # capture_module NAME: /sys/module/NAME/parameters, if any
    m=$1
    [ -d "/sys/module/$m" ] || return 0
    mkdir -p "$C/sys/module/$m"
    [ -d "/sys/module/$m/parameters" ] && cp -a "/sys/module/$m/parameters" "$C/sys/module/$m/"
    # initstate and refcnt exist for loadable modules; uevent (write-only) for every module,
    # so no module directory is empty (git would drop it, and driver/module links dangle).
    copy_present "/sys/module/$m" "$C/sys/module/$m" initstate refcnt
    placeholders "/sys/module/$m" "$C/sys/module/$m" uevent
    return 0
}

capture() { # capture DEST ETCDIR
    C=$1
    mkdir -p "$C/sys/bus/pci/drivers" "$C/sys/kernel" "$C/sys/class" "$C/sys/module" \
        "$C/proc/sys/kernel" "$C/dev"
    cp -a /sys/bus/pci/devices "$C/sys/bus/pci/"
    : >"$C/sys/bus/pci/drivers_probe"
    : >"$C/sys/bus/pci/rescan"
    for l in /sys/bus/pci/devices/*; do
        cd -P "$l" || continue
        p=$PWD
        cd /
        # shellcheck disable=SC2086
        copy_present "$p" "$C$p" $DEV_ATTRS
        # shellcheck disable=SC2086
        placeholders "$p" "$C$p" $DEV_WRITE_ONLY
    done
    for d in /sys/bus/pci/drivers/*; do
        n=${d##*/}
        cd "$d" || continue
        # the glob expands here, in $d: the devices bound to this driver
        copy_present "$d" "$C/sys/bus/pci/drivers/$n" module 0000:*
        # shellcheck disable=SC2086
        placeholders "$d" "$C/sys/bus/pci/drivers/$n" $DRV_WRITE_ONLY
        if [ -L "$d/module" ]; then
            cd -P "$d/module" && capture_module "${PWD##*/}"
            cd /
        fi
    done
    for m in vfio vfio_pci vfio_pci_core vfio_iommu_type1 vfio_virqfd kvm kvm_intel kvm_amd; do
        capture_module $m
    done
    [ -d /sys/kernel/iommu_groups ] && cp -a /sys/kernel/iommu_groups "$C/sys/kernel/"
    if [ -d /sys/class/iommu ]; then
        cp -a /sys/class/iommu "$C/sys/class/"
        for i in /sys/class/iommu/*; do
            [ -L "$i" ] || continue
            cd -P "$i" || continue
            p=$PWD
            cd /
            mkdir -p "$C$p"
            for sub in intel-iommu amd-iommu devices; do
                [ -d "$p/$sub" ] && cp -a "$p/$sub" "$C$p/"
            done
            [ -e "$p/subsystem" ] && cp -a "$p/subsystem" "$C$p/"
        done
    fi
    if [ -d /sys/firmware/efi ]; then
        mkdir -p "$C/sys/firmware/efi"
        for f in fw_platform_size systab; do
            [ -e /sys/firmware/efi/$f ] && cp /sys/firmware/efi/$f "$C/sys/firmware/efi/"
        done
    fi
    cp /proc/cmdline /proc/cpuinfo /proc/modules /proc/interrupts /proc/meminfo "$C/proc/"
    cp /proc/sys/kernel/osrelease "$C/proc/sys/kernel/"
    if [ -d /dev/vfio ]; then
        mkdir -p "$C/dev/vfio"
        for v in /dev/vfio/*; do [ -e "$v" ] && : >"$C/dev/vfio/${v##*/}"; done
    fi
    # /etc, so the tree is a complete host root: in the "before" state the stock /etc the
    # guest started from, in the "after" state /etc as apply left it.
    cp -a "$2" "$C/etc"
    if [ -f /tmp/dpkg-status.orig ]; then
        mkdir -p "$C/var/lib/dpkg"
        cp /tmp/dpkg-status.orig "$C/var/lib/dpkg/status"
    fi
    return 0
}

send_capture() { # send_capture NAME ETC
    rm -rf "/tmp/cap-$1"
    capture "/tmp/cap-$1" "$2" 2>"$OUT/capture-$1.err"
    tar -C "/tmp/cap-$1" -czf "/tmp/cap-$1.tgz" .
    send "/tmp/cap-$1.tgz" "capture-$1.tgz"
    send "$OUT/capture-$1.err"
}

# passthru capture of the live guest, unpacked where passthru --root reads it (the host
# compares its answers with the live ones: check.py, check_capture).
capture_unpack() {
    rm -rf /tmp/c
    mkdir -p /tmp/c && tar -xzf /tmp/c.tar.gz -C /tmp/c
}

# ct_check: Debian's lxc starts an unprivileged container (ids mapped to 100000, as Proxmox VE
# maps them) whose config carries what pve-container generates for "dev0: /dev/nvidia0": the
# device rules of lxc's common.conf (deny all, then mknod for all) plus
# "lxc.cgroup2.devices.allow = c 195:0 rw", and the node made with the host's numbers under
# /var/lib/lxc/105/passthrough, owned by the container's root, bound in. No driver has major 195
# here. Inside, opening /dev/nvidia0 (allowed) must fail with ENXIO, /dev/nvidia1 (c 195:1, bound
# in but named by no rule) with EPERM. Prints one line per node: NAME rc=N, then dd's message.
ct_check() {
    L=/var/lib/lxc/105
    mkdir -p /sys/fs/cgroup /run/lxc "$L/passthrough" /tmp/ctout
    for d in bin dev proc sys tmp/out; do mkdir -p "$L/rootfs/$d"; done
    grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts || mount -t cgroup2 cgroup2 /sys/fs/cgroup || return 1
    mount -t tmpfs -o size=8k none "$L/passthrough" || return 1
    mkdir -p "$L/passthrough/dev"
    for m in 0 1; do
        mknod "$L/passthrough/dev/nvidia$m" c 195 "$m" || return 1
        chmod 0660 "$L/passthrough/dev/nvidia$m"
        chown 100000:100000 "$L/passthrough/dev/nvidia$m"
        : >"$L/rootfs/dev/nvidia$m"
    done
    cp /bin/busybox "$L/rootfs/bin/busybox"
    # The rootfs belongs to the container's root, as an unprivileged container's does: lxc
    # makes /proc's and /dev's entries in it as that user.
    chown -R 100000:100000 "$L/rootfs" /tmp/ctout
    cat >"$L/rootfs/probe.sh" <<'EOF'
for n in nvidia0 nvidia1; do
    /bin/busybox dd if=/dev/$n of=/tmp/out/sink bs=1 count=0 2>/tmp/out/$n.err
    echo "$n rc=$? $(/bin/busybox cat /tmp/out/$n.err)" >>/tmp/out/result
done
EOF
    cat >"$L/config" <<EOF
lxc.uts.name = ct105
lxc.rootfs.path = dir:$L/rootfs
lxc.idmap = u 0 100000 65536
lxc.idmap = g 0 100000 65536
lxc.apparmor.profile = unconfined
lxc.console.path = none
lxc.tty.max = 0
lxc.pty.max = 0
lxc.autodev = 0
lxc.net.0.type = empty
lxc.cgroup2.devices.deny = a
lxc.cgroup2.devices.allow = c *:* m
lxc.cgroup2.devices.allow = b *:* m
lxc.cgroup2.devices.allow = c 195:0 rw
lxc.mount.entry = $L/passthrough/dev/nvidia0 dev/nvidia0 none bind 0 0
lxc.mount.entry = $L/passthrough/dev/nvidia1 dev/nvidia1 none bind 0 0
lxc.mount.entry = /tmp/ctout tmp/out none bind 0 0
lxc.init.cmd = /bin/busybox sh /probe.sh
EOF
    t0=$(cut -d' ' -f1 /proc/uptime)
    lxc-start -F -n 105 -P /var/lib/lxc -o "$OUT/lxc.log" -l DEBUG
    rc=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    echo "lxc-start rc=$rc from $t0 to $t1"
    cat /tmp/ctout/result
    return "$rc"
}

# --- planted values: the live guest's capture carries none ------------------------------
# A secret, an address, a MAC and another node's name planted in the files capture reads on
# the live guest (a VM config's free text, storage.cfg, a PCI mapping, a task list and log),
# then a second capture: every planted value is listed with the members that still hold it
# (none, as tests/integration/capture.sh checks on the fixture hosts). It runs last: it
# changes /etc/pve and /var/log/pve, which no step after it reads.
PLANTED="PlantedPw-4417 PlantedTok-4418 10.99.88.77 10.99.88.78 2a01:4f8:77:66::55 de:ad:be:ef:44:17 fn-planted-4419"
capture_planted() {
    conf=/etc/pve/qemu-server/101.conf
    { echo "#owner PlantedTok-4418 at 10.99.88.78"; cat "$conf"; } >/tmp/101.planted
    echo "args: -smbios type=11,value=PlantedPw-4417 -netdev tap,mac=de:ad:be:ef:44:17" >>/tmp/101.planted
    cat /tmp/101.planted >"$conf"
    printf 'cifs: share\n\tserver 10.99.88.77\n\tshare b\n\tusername admin\n\tpassword PlantedPw-4417\n\tnodes pve,fn-planted-4419\n' \
        >>/etc/pve/storage.cfg
    mkdir -p /etc/pve/mapping /var/log/pve/tasks/2
    printf 'gpu\n\tmap id=1234:1111,node=fn-planted-4419,path=0000:04:00.0\n' >>/etc/pve/mapping/pci.cfg
    upid=UPID:fn-planted-4419:0000A1B2:00C3D4E5:6564A3F2:qmstart:101:root@pam:
    printf 'kvm: connect to 10.99.88.77 [2a01:4f8:77:66::55] failed\nTASK ERROR: start failed\n' >"/var/log/pve/tasks/2/$upid"
    printf '%s 6564A3F4 start failed: QEMU exited with code 1\n' "$upid" >>/var/log/pve/tasks/index
    rm -rf /tmp/p /tmp/p.tar.gz
    passthru capture /tmp/p.tar.gz >/dev/null || return 2
    mkdir -p /tmp/p && tar -xzf /tmp/p.tar.gz -C /tmp/p || return 2
    for f in etc/pve/qemu-server/101.conf etc/pve/storage.cfg var/log/pve/tasks/index; do
        [ -f "/tmp/p/$f" ] && echo "packed: $f"
    done
    left=0
    for v in $PLANTED; do
        # member names and bytes alike
        if (cd /tmp/p && find . | grep -Fi -- "$v") || grep -rlFi -- "$v" /tmp/p; then
            echo "survives: $v"
            left=1
        fi
    done
    return $left
}

# --- the sequence ------------------------------------------------------------------------
say "init started, kernel $(cat /proc/sys/kernel/osrelease), uptime $(cut -d' ' -f1 /proc/uptime)"
cp -a /etc /etc.orig
[ -f /var/lib/dpkg/status ] && cp /var/lib/dpkg/status /tmp/dpkg-status.orig

step load load_host_drivers
step drivers-before drivers
step groups groups
send_capture before /etc.orig

if [ -x /usr/sbin/passthru ]; then
    step scan passthru scan --json
    step scan-human passthru scan
    step plan passthru plan --vm 101 --gpus 0000:04:00 --json
    step pt-capture passthru capture /tmp/c.tar.gz
    step pt-capture-unpack capture_unpack
    step pt-capture-manifest cat /tmp/c/CAPTURE.json
    step pt-capture-scan passthru --root /tmp/c scan --json
    step pt-capture-plan passthru --root /tmp/c plan --vm 101 --gpus 0000:04:00 --json
    step apply passthru apply --vm 101 --gpus 0000:04:00 --yes
    step changes show_changes
    step reload reload_drivers
    step drivers-after drivers
    step verify passthru verify --vm 101
    step verify-busy verify_busy
    step dev-vfio ls -l /dev/vfio
else
    say "no passthru binary in the image: smoke test only"
    step smoke-bind smoke_bind
    step drivers-after drivers
fi
send_capture after /etc
[ -x /usr/sbin/passthru ] && step rom-dump rom_dump_vga
if grep -qw passthru.ct=1 /proc/cmdline; then
    c0=$(cut -d' ' -f1 /proc/uptime)
    step ct ct_check
    [ -f "$OUT/lxc.log" ] && send "$OUT/lxc.log"
    say "container check took $c0 to $(cut -d' ' -f1 /proc/uptime) (uptime s)"
fi
[ -x /usr/sbin/passthru ] && step pt-capture-planted capture_planted

dmesg >"$OUT/dmesg.txt"
send "$OUT/dmesg.txt"
say "finished at uptime $(cut -d' ' -f1 /proc/uptime)"
echo "@@PT:DONE"
sync
poweroff -f
