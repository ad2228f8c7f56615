// SPDX-License-Identifier: GPL-2.0-or-later
// plan/vm/start_checks: what Proxmox VE's start code refuses before QEMU
// runs, on a VM config and a small Inventory: sockets x cores against the
// node's CPUs, pcie=1 without q35, hostpci ids and mappings the node lacks,
// huge pages (numa, the sizes the kernel offers, whole pages).
#include <doctest/doctest.h>

#include <algorithm>

#include "plan/vm/start_checks.hpp"

using namespace passthru;
using passthru::format::pve::PciMappingFile;
using passthru::format::pve::VmConfig;
using passthru::plan::detail::StartContext;

namespace {

// A node with 6 CPUs (an i5-9400), 2 MiB and 1 GiB pages, and a card at 01:00.
scan::Inventory node()
{
    scan::Inventory inv;
    inv.host.cpu_count = 6;
    inv.host.hugepage_sizes_kib = std::vector<std::uint64_t>{2048, 1048576};
    for (const char* a : {"0000:00:01.0", "0000:01:00.0", "0000:01:00.1"}) {
        scan::PciDevice d;
        d.address = *scan::PciAddress::parse(a);
        inv.devices.push_back(d);
    }
    return inv;
}

const std::string k_base = "machine: q35\nmemory: 16384\nsockets: 1\ncores: 4\nhostpci0: 0000:01:00,pcie=1\n";

std::vector<plan::Refusal> refusals(const scan::Inventory& inv, const std::string& conf, const PciMappingFile* mappings = nullptr,
                                    std::optional<std::string> node_name = std::string("pve"))
{
    const StartContext ctx{inv, mappings, std::move(node_name), "101"};
    return plan::detail::start_refusals(ctx, VmConfig::parse(conf));
}

bool mentions(const std::vector<plan::Refusal>& out, std::string_view text)
{
    return std::any_of(out.begin(), out.end(), [&](const plan::Refusal& r) {
        return r.message.find(text) != std::string::npos
               || std::any_of(r.hints.begin(), r.hints.end(), [&](const std::string& h) { return h.find(text) != std::string::npos; });
    });
}

} // namespace

TEST_SUITE("plan::vm::start_checks")
{
    TEST_CASE("a VM Proxmox VE starts: no refusal")
    {
        CHECK(refusals(node(), k_base).empty());
    }

    TEST_CASE("sockets x cores above the node's CPUs: Proxmox's MAX N vcpus, with the cores that fit")
    {
        auto out = refusals(node(), k_base + "cores: 8\n");
        REQUIRE(out.size() == 1);
        CHECK(mentions(out, "VM 101 has 8 vCPUs (1 socket(s) x 8 cores) but this node has 6 CPUs"));
        CHECK(mentions(out, "MAX 6 vcpus allowed per VM on this node"));
        CHECK(out[0].hints == std::vector<std::string>{"qm set 101 --cores 6"});

        out = refusals(node(), "sockets: 2\ncores: 4\n");
        REQUIRE(out.size() == 1);
        CHECK(out[0].hints == std::vector<std::string>{"qm set 101 --cores 3"});
        out = refusals(node(), "sockets: 8\ncores: 1\n");
        REQUIRE(out.size() == 1);
        CHECK(out[0].hints == std::vector<std::string>{"qm set 101 --sockets 1 --cores 6"});
        CHECK(mentions(refusals(node(), "smp: 4\ncores: 2\n"), "8 vCPUs (4 socket(s)")); // the old key
        CHECK(refusals(node(), "cores: 6\nvcpus: 2\n").empty());                         // vcpus plays no part
        scan::Inventory unknown = node();
        unknown.host.cpu_count = 0; // no /proc/cpuinfo under the root
        CHECK(refusals(unknown, "cores: 64\n").empty());
    }

    TEST_CASE("pcie=1 without a q35 machine")
    {
        auto out = refusals(node(), "hostpci0: 0000:01:00,pcie=1\n");
        REQUIRE(out.size() == 1);
        CHECK(mentions(out, "hostpci0 has pcie=1 but the machine is not q35"));
        CHECK(out[0].hints == std::vector<std::string>{"qm set 101 --machine q35"});
        CHECK(mentions(refusals(node(), "machine: pc-i440fx-8.1\nhostpci0: 0000:01:00,pcie=1\n"), "not q35"));
        CHECK(refusals(node(), "machine: pc-q35-8.1+pve1\nhostpci0: 0000:01:00,pcie=1\n").empty());
        CHECK(refusals(node(), "machine: type=q35,viommu=intel\nhostpci0: 0000:01:00,pcie=1\n").empty());
        CHECK(refusals(node(), "hostpci0: 0000:01:00\n").empty()); // i440fx takes a plain PCI device
    }

    TEST_CASE("a hostpci id no device of the node matches")
    {
        auto out = refusals(node(), k_base + "hostpci1: 0000:02:00,pcie=1\n");
        REQUIRE(out.size() == 1);
        CHECK(mentions(out, "hostpci1 passes 0000:02:00, which is not on this node's PCI bus"));
        CHECK(mentions(out, "no PCI device found for '0000:02:00'"));
        CHECK(mentions(out, "qm set 101 --delete hostpci1"));
        CHECK(refusals(node(), k_base + "hostpci1: 01:00.1;0000:00:01.0,pcie=1\n").empty()); // short form, two ids
        CHECK(mentions(refusals(node(), k_base + "hostpci1: 01:00.1;0000:03:00.0,pcie=1\n"), "passes 0000:03:00.0"));
    }

    TEST_CASE("a mapping without an entry for this node")
    {
        const auto here = PciMappingFile::parse("gpu\n\tmap id=10de:2204,node=pve,path=0000:01:00\n");
        const auto elsewhere = PciMappingFile::parse("gpu\n\tmap id=10de:2204,node=pve2,path=0000:01:00\n");
        const std::string conf = "machine: q35\nhostpci0: mapping=gpu,pcie=1\n";
        CHECK(refusals(node(), conf, &here).empty());
        auto out = refusals(node(), conf, &elsewhere);
        REQUIRE(out.size() == 1);
        CHECK(mentions(out, "uses mapping gpu, which has no entry for node pve"));
        CHECK(mentions(out, "PCI device mapping not found for 'gpu'"));
        CHECK(mentions(refusals(node(), conf, nullptr), "PCI device mapping not found")); // no pci.cfg at all
        CHECK(refusals(node(), conf, &elsewhere, std::nullopt).empty());                  // node unknown: not judged
    }

    TEST_CASE("hugepages: numa, the sizes the kernel offers, whole pages")
    {
        const std::string base = "machine: q35\ncores: 4\nnuma: 1\n";
        CHECK(refusals(node(), base + "memory: 16384\nhugepages: 1024\n").empty());
        CHECK(refusals(node(), base + "memory: 4098\nhugepages: 2\n").empty());

        auto out = refusals(node(), "cores: 4\nmemory: 16384\nhugepages: 2\n");
        REQUIRE(out.size() == 1);
        CHECK(mentions(out, "numa needs to be enabled to use hugepages"));
        CHECK(out[0].hints == std::vector<std::string>{"qm set 101 --numa 1"});

        scan::Inventory no_gb = node();
        no_gb.host.hugepage_sizes_kib = std::vector<std::uint64_t>{2048};
        out = refusals(no_gb, base + "memory: 16384\nhugepages: 1024\n");
        REQUIRE(out.size() == 1);
        CHECK(mentions(out, "doesn't support hugepages of 1024 MB"));
        CHECK(mentions(out, "qm set 101 --hugepages 2"));
        CHECK(refusals(no_gb, base + "memory: 3000\nhugepages: any\n").empty()); // any: 2 MiB pages then

        scan::Inventory only_gb = node();
        only_gb.host.hugepage_sizes_kib = std::vector<std::uint64_t>{1048576};
        CHECK(mentions(refusals(only_gb, base + "memory: 3000\nhugepages: any\n"), "offers only 1 GiB pages"));
        CHECK(refusals(only_gb, base + "memory: 4096\nhugepages: any\n").empty());

        scan::Inventory none = node();
        none.host.hugepage_sizes_kib = std::vector<std::uint64_t>{};
        CHECK(mentions(refusals(none, base + "memory: 4096\nhugepages: 2\n"), "doesn't support hugepages"));

        out = refusals(node(), base + "memory: current=17000\nhugepages: 1024\n");
        REQUIRE(out.size() == 1);
        CHECK(mentions(out, "17000 MiB of memory, not a multiple of its 1024 MiB huge pages"));
        CHECK(out[0].hints == std::vector<std::string>{"qm set 101 --memory 17408"});
        CHECK(mentions(refusals(node(), base + "memory: 4097\nhugepages: 2\n"), "not a multiple of its 2 MiB"));

        scan::Inventory unknown = node();
        unknown.host.hugepage_sizes_kib.reset(); // no /sys/kernel/mm/hugepages under the root
        CHECK(refusals(unknown, base + "memory: 17000\nhugepages: 1024\n").empty());
    }

    TEST_CASE("the config qm create makes, and the cores that fit")
    {
        const auto config = plan::detail::config_of_create(
            {"qm", "create", "101", "--cores", "8", "--sockets", "1", "--hostpci0", "0000:01:00,pcie=1", "--machine", "q35"});
        CHECK(config.get("cores") == "8");
        CHECK(config.get("hostpci0") == "0000:01:00,pcie=1");
        const scan::Inventory inv = node();
        const StartContext ctx{inv, nullptr, std::string("pve"), "101"};
        CHECK(mentions(plan::detail::start_refusals(ctx, config), "MAX 6 vcpus"));
        CHECK(plan::detail::max_cores(6, 1) == 6);
        CHECK(plan::detail::max_cores(6, 4) == 1);
        CHECK(plan::detail::max_cores(2, 8) == 1);
    }
}
