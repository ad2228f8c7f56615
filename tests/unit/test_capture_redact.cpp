// SPDX-License-Identifier: GPL-2.0-or-later
#include <doctest/doctest.h>

#include <string>

#include "capture/redact.hpp"

using passthru::capture::RedactKind;
using passthru::capture::RedactOptions;
using passthru::capture::Redactor;

TEST_SUITE("capture::Redactor")
{
    TEST_CASE("VM config secrets and free text go, every other line stays")
    {
        Redactor r(RedactOptions{});
        const std::string conf = "cipassword: hunter2\nsshkeys: ssh-rsa%20AAAA%20me\nmy_api_Token: t0k\nvnc_secret: s\n"
                                 "args: -cpu host,kvm=off\nname: web\n#cipassword: in a comment\n";
        const std::string out = r.content("/etc/pve/qemu-server/101.conf", conf);
        CHECK(out
              == "cipassword: redacted\nsshkeys: redacted\nmy_api_Token: redacted\nvnc_secret: redacted\n"
                 "args: redacted\nname: web\n#redacted\n");
        CHECK(r.counts().at({"/etc/pve/qemu-server/101.conf", RedactKind::secret}) == 6);
        CHECK(r.content("/etc/pve/nodes/pve/qemu-server/102.conf", "#web%20server%20for%20ACME\ndescription: ours\n"
                                                                   "scsi0: local-lvm:vm-102-disk-0,serial=WD-123456,size=32G\n"
                                                                   "[snap1]\nscsi1: x:y,serial=S1\n")
              == "#redacted\ndescription: redacted\nscsi0: local-lvm:vm-102-disk-0,serial=redacted,size=32G\n[snap1]\nscsi1: "
                 "x:y,serial=redacted\n");
        // --keep-* keeps addresses and names, never secrets
        Redactor keep(RedactOptions{false, false});
        CHECK(keep.content("/etc/pve/qemu-server/101.conf", "cipassword: x\n") == "cipassword: redacted\n");
    }

    TEST_CASE("IP addresses map to documentation ranges, prefix lengths and host parts kept")
    {
        Redactor r(RedactOptions{});
        const std::string out = r.content("/etc/pve/qemu-server/101.conf",
                                          "ipconfig0: ip=10.1.2.3/24,gw=10.1.2.1,ip6=2a01:4f8:1:2:a1b2:c3ff:fed4:e5f6/64,gw6=fe80::1\n"
                                          "ipconfig1: ip=172.16.9.9/16\n");
        CHECK(out
              == "ipconfig0: ip=192.0.2.3/24,gw=192.0.2.1,ip6=2001:db8:0:1::1:1/64,gw6=fe80::1\n"
                 "ipconfig1: ip=198.51.100.9/16\n");
        // the same address maps the same way in another file, and in /proc/net's hex
        CHECK(r.content("/etc/network/interfaces", "\taddress 10.1.2.3/24\n\tnetmask 255.255.255.0\n")
              == "\taddress 192.0.2.3/24\n\tnetmask 255.255.255.0\n");
        const std::string route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                                  "vmbr0\t00000000\t0102010A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        CHECK(r.content("/proc/net/route", route)
              == "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                 "vmbr0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n");
        CHECK(r.content("/proc/net/if_inet6", "2a0104f8000100020000000000000abcd 02 40 00 80 vmbr0\n")
              == "2a0104f8000100020000000000000abcd 02 40 00 80 vmbr0\n"); // 33 hex digits: not an address
        CHECK(r.content("/proc/net/if_inet6", "2a0104f800010002a1b2c3fffed4e5f6 02 40 00 80 vmbr0\n")
              == "20010db8000000010000000000010001 02 40 00 80 vmbr0\n");
        // a small interface id (::abcd, ::1) says nothing of the host and is kept
        CHECK(r.map_ipv6("2a01:4f8:1:2::abcd") == "2001:db8:0:1::abcd");
        // loopback, unspecified, masks and versions that are not addresses stay
        CHECK(r.content("/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n") == "127.0.0.1 localhost\n::1 localhost\n");
        CHECK(r.map_ipv4("1.2.3.4.5") == "1.2.3.4.5");
    }

    TEST_CASE("more /24 networks than documentation networks go to the benchmarking range")
    {
        Redactor r(RedactOptions{});
        CHECK(r.map_ipv4("10.0.1.5") == "192.0.2.5");
        CHECK(r.map_ipv4("10.0.2.5") == "198.51.100.5");
        CHECK(r.map_ipv4("10.0.3.5") == "203.0.113.5");
        CHECK(r.map_ipv4("10.0.4.5") == "198.18.0.5");
        CHECK(r.map_ipv4("10.0.1.6") == "192.0.2.6");
    }

    TEST_CASE("MAC addresses become locally administered ones, the same everywhere, case kept")
    {
        Redactor r(RedactOptions{});
        CHECK(r.content("/etc/pve/qemu-server/101.conf", "net0: virtio=BC:24:11:2E:7A:51,bridge=vmbr0\n")
              == "net0: virtio=02:00:00:00:00:01,bridge=vmbr0\n");
        CHECK(r.content("/sys/class/net/enp1s0/address", "bc:24:11:2e:7a:51\n") == "02:00:00:00:00:01\n");
        CHECK(r.content("/sys/class/net/enp2s0/address", "bc:24:11:2e:7a:52\n") == "02:00:00:00:00:02\n");
        CHECK(r.content("/sys/class/net/lo/address", "00:00:00:00:00:00\n") == "00:00:00:00:00:00\n");
        // PCI addresses and times are not MACs
        CHECK(r.content("/proc/1/cmdline", "0000:01:00.0 12:30:45 aa:bb:cc:dd:ee:ff:00") == "0000:01:00.0 12:30:45 aa:bb:cc:dd:ee:ff:00");
        // PCI config space is packed as read
        CHECK(r.content("/sys/bus/pci/devices/0000:01:00.0/config", "bc:24:11:2e:7a:51") == "bc:24:11:2e:7a:51");
        Redactor keep(RedactOptions{true, false});
        CHECK(keep.content("/sys/class/net/enp1s0/address", "bc:24:11:2e:7a:51\n") == "bc:24:11:2e:7a:51\n");
    }

    TEST_CASE("host names are replaced in files and paths alike, /etc/pve itself kept")
    {
        Redactor r(RedactOptions{});
        r.add_hostname("pve");
        r.add_hostname("gpu-2.lab.example.com");
        CHECK(r.content("/etc/hostname", "pve\n") == "node1\n");
        CHECK(r.path("/etc/pve/nodes/pve/qemu-server/101.conf") == "/etc/pve/nodes/node1/qemu-server/101.conf");
        CHECK(r.link_target("/etc/pve/local", "nodes/pve") == "nodes/node1");
        CHECK(r.path("/var/log/pve/tasks/5/UPID:pve:0000A1B2:00C3D4E5:6543210F:qmstart:101:root@pam:")
              == "/var/log/pve/tasks/5/UPID:node1:0000A1B2:00C3D4E5:6543210F:qmstart:101:root@pam:");
        CHECK(r.content("/var/log/pve/tasks/index", "UPID:pve:0000A1B2:00C3D4E5:6543210F:qmstart:101:root@pam: 6543211A OK\n")
              == "UPID:node1:0000A1B2:00C3D4E5:6543210F:qmstart:101:root@pam: 6543211A OK\n");
        CHECK(r.content("/etc/pve/.vmlist", R"({"ids": {"101": {"node": "gpu-2", "type": "qemu"}}})")
              == R"({"ids": {"101": {"node": "node2", "type": "qemu"}}})");
        CHECK(r.content("/etc/hostname", "gpu-2.lab.example.com\n") == "node2.invalid\n");
        // a path outside /etc/pve and the task logs keeps its components; so do other files
        CHECK(r.path("/etc/pve/storage.cfg") == "/etc/pve/storage.cfg");
        CHECK(r.path("/usr/share/pve/x") == "/usr/share/pve/x");
        CHECK(r.content("/etc/kernel/cmdline", "root=ZFS=rpool/ROOT/pve-1 pve\n") == "root=ZFS=rpool/ROOT/pve-1 pve\n");
        CHECK(r.counts().at({"/etc/hostname", RedactKind::hostname}) == 2);
        Redactor keep(RedactOptions{false, true});
        keep.add_hostname("pve");
        CHECK(keep.content("/etc/hostname", "pve\n") == "pve\n");
        CHECK(keep.path("/etc/pve/nodes/pve") == "/etc/pve/nodes/pve");
    }

    TEST_CASE("a secret is redacted by its key in any file, in any key-value form")
    {
        Redactor r(RedactOptions{});
        CHECK(r.content("/etc/pve/storage.cfg", "cifs: share\n\tserver 10.9.8.7\n\tusername bob\n\tpassword hunter2\n")
              == "cifs: share\n\tserver 192.0.2.7\n\tusername bob\n\tpassword redacted\n");
        CHECK(r.content("/etc/default/grub", "GRUB_PASSWORD=\"x y\"\nGRUB_TIMEOUT=5\n") == "GRUB_PASSWORD=\"redacted\"\nGRUB_TIMEOUT=5\n");
        CHECK(r.content("/proc/cmdline", "quiet api_token=abc,def iommu=pt\n") == "quiet api_token=redacted,def iommu=pt\n");
        CHECK(r.content("/etc/x.json", "{\"name\": \"a\", \"secret\": \"s3\"}\n  \"Token\": \"t\",\n")
              == "{\"name\": \"a\", \"secret\": \"redacted\"}\n  \"Token\": \"redacted\",\n");
        CHECK(r.content("/var/log/pve/tasks/1/UPID:x", "Password: swordfish\n") == "Password: redacted\n");
        // flags are no secrets; keyboard is no key
        CHECK(r.content("/etc/pve/qemu-server/1.conf", "efidisk0: a:b,pre-enrolled-keys=1\nkeyboard: de\n")
              == "efidisk0: a:b,pre-enrolled-keys=1\nkeyboard: de\n");
    }

    TEST_CASE("addresses go in every file, /proc/PID/net read as /proc/net")
    {
        Redactor r(RedactOptions{});
        CHECK(r.content("/var/log/pve/tasks/5/UPID:a", "connect to 10.1.2.3 and 2a01:4f8:1:2:a1b2:c3ff:fed4:e5f6\n")
              == "connect to 192.0.2.3 and 2001:db8:0:1::1:1\n");
        const std::string route = "Iface\tDestination\tGateway\nvmbr0\t00000000\t0102010A\n";
        for (const char* p : {"/proc/4242/net/route", "/proc/self/net/route", "/proc/thread-self/net/route", "/proc/1/task/7/net/route"}) {
            CHECK(r.content(p, route) == "Iface\tDestination\tGateway\nvmbr0\t00000000\t010200C0\n");
        }
        CHECK(r.content("/proc/12/net/if_inet6", "2a0104f800010002a1b2c3fffed4e5f6 02 40 00 80 vmbr0\n")
              == "20010db8000000010000000000010001 02 40 00 80 vmbr0\n");
        // not a /proc/net table: kept as text
        CHECK(r.content("/proc/12/x/route", "0102010A\n") == "0102010A\n");
    }

    TEST_CASE("node names are learnt from the cluster and replaced where they stand as names")
    {
        Redactor r(RedactOptions{});
        r.learn("/etc/hostname", "pve\n");
        r.learn("/etc/hosts", "10.0.0.1 pve.lab.example pve\n");
        r.learn("/etc/pve/corosync.conf", "nodelist {\n  node {\n    name: pve\n    ring0_addr: 10.0.0.1\n  }\n"
                                          "  node {\n    name: pve2\n    ring0_addr: pve3\n  }\n}\n");
        r.learn("/etc/pve/mapping/pci.cfg", "gpu\n\tmap id=10de:1e04,node=pve4,path=0000:01:00.0\n");
        r.learn("/etc/pve/storage.cfg", "nfs: x\n\tnodes pve5,pve6\n");
        CHECK(r.content("/etc/pve/mapping/pci.cfg", "gpu\n\tmap id=10de:1e04,node=pve4,path=0000:01:00.0\n\tmap node=pve2\n")
              == "gpu\n\tmap id=10de:1e04,node=node1,path=0000:01:00.0\n\tmap node=node2\n");
        CHECK(r.content("/etc/pve/storage.cfg", "lvmthin: local-lvm\n\tthinpool data\n\tvgname pve\n\tnodes pve5,pve6,pve3\n")
              == "lvmthin: local-lvm\n\tthinpool data\n\tvgname pve\n\tnodes node3,node4,node5\n");
        CHECK(r.content("/etc/pve/user.cfg", "user:alice@pve:1:0:::\n") == "user:alice@pve:1:0:::\n");
        CHECK(r.content("/etc/hosts", "10.0.0.1 pve.lab.example pve\n") == "192.0.2.1 node6.invalid node6\n");
        // outside the cluster's files: a name with its domain, or a host key's value
        CHECK(r.content("/etc/kernel/cmdline", "pve root=/dev/pve/root\n") == "pve root=/dev/pve/root\n");
        CHECK(r.content("/etc/x.conf", "host=pve2 pve.lab.example pve.conf\n") == "host=node2 node6.invalid pve.conf\n");
    }
}
