// SPDX-License-Identifier: GPL-2.0-or-later
// plan/vm/address_space: the guest's address bits and 64-bit MMIO window under
// OVMF, and the cpu line the plan writes when the cards' BARs do not fit.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "plan/vm/address_space.hpp"
#include "util/strings.hpp"

using namespace passthru;
using format::pve::PropertyString;
namespace detail = passthru::plan::detail;

namespace {

constexpr std::uint64_t k_gib = 1ULL << 30;
constexpr std::uint64_t k_mib = 1ULL << 20;

detail::AddressLimits shipped_limits()
{
    const auto path = std::filesystem::path(PASSTHRU_FIXTURES_DIR).parent_path().parent_path() / "profiles" / "host" / "address-space.json";
    std::ifstream in(path);
    REQUIRE(in.good());
    std::ostringstream s;
    s << in.rdbuf();
    auto limits = data::parse_address_limits(s.str(), path.string());
    REQUIRE(limits);
    return *limits;
}

scan::HostInfo host_cpu(const std::string& vendor, int bits, bool pdpe1gb)
{
    scan::HostInfo h;
    h.cpu_vendor = vendor;
    h.phys_address_bits = bits;
    h.pdpe1gb = pdpe1gb;
    h.qemu_server_version = "9.1.7";
    return h;
}

// A card at BUS:00 with a 64-bit prefetchable BAR of VRAM_BAR bytes and the 32 MiB one NVIDIA cards have beside it.
void add_card(scan::Inventory& inv, std::uint8_t bus, std::uint64_t vram_bar)
{
    scan::PciDevice d;
    d.address = scan::PciAddress{0, bus, 0, 0};
    d.mem_bars = {{0, 16 * k_mib, false, false}, {1, vram_bar, true, true}, {3, 32 * k_mib, true, true}};
    inv.devices.push_back(d);
    scan::GpuCard card;
    card.functions = {d.address};
    inv.gpus.push_back(card);
}

std::vector<const scan::GpuCard*> all_cards(const scan::Inventory& inv)
{
    std::vector<const scan::GpuCard*> out;
    out.reserve(inv.gpus.size());
    for (const auto& c : inv.gpus) {
        out.push_back(&c);
    }
    return out;
}

detail::GuestAddressing guest(const scan::HostInfo& host, const std::string& cpu, std::uint64_t mmio, std::uint64_t ram_mib = 65536)
{
    return detail::guest_addressing(shipped_limits(), host, PropertyString::parse(cpu), mmio, ram_mib);
}

} // namespace

TEST_SUITE("plan::vm::address_space")
{
    TEST_CASE("the MMIO the cards' 64-bit prefetchable BARs need: per card rounded up to its largest BAR")
    {
        scan::Inventory inv;
        add_card(inv, 0x04, 16 * k_gib); // V100 16 GB: 16 GiB + 32 MiB -> 32 GiB behind its root port
        add_card(inv, 0x05, 32 * k_gib); // V100 32 GB: 64 GiB
        CHECK(detail::mmio64_needed(inv, all_cards(inv)) == 96 * k_gib);
        scan::Inventory none;
        scan::GpuCard bare;
        bare.functions = {scan::PciAddress{0, 9, 0, 0}};
        none.gpus.push_back(bare);
        CHECK(detail::mmio64_needed(none, all_cards(none)) == 0);
        scan::Inventory garbled; // a resource file no machine could have: counted as more than any window, never wrapped
        add_card(garbled, 0x06, ~0ULL);
        add_card(garbled, 0x07, ~0ULL);
        CHECK(detail::mmio64_needed(garbled, all_cards(garbled)) == (1ULL << 56));
        CHECK_FALSE(guest(host_cpu("AMD", 52, true), "host", detail::mmio64_needed(garbled, all_cards(garbled)), ~0ULL).fits);
    }

    TEST_CASE("cpu host on a host with pdpe1gb: the host's bits up to OVMF's 46")
    {
        const auto g = guest(host_cpu("Intel", 52, true), "host", 4 * 128 * k_gib);
        REQUIRE(g.bits);
        CHECK(*g.bits == 46);
        CHECK(g.trusted);
        CHECK(g.window_bytes == (1ULL << 43));
        CHECK(g.fits);
    }

    TEST_CASE("qemu64-based models get QEMU's 40 bits: OVMF trusts them from AMD (a 128 GiB window), not from Intel (32 GiB)")
    {
        const auto intel = guest(host_cpu("Intel", 46, true), "x86-64-v2-AES", 64 * k_gib);
        REQUIRE(intel.bits);
        CHECK(*intel.bits == 40);
        CHECK_FALSE(intel.trusted);
        CHECK(intel.window_bytes == 32 * k_gib);
        CHECK_FALSE(intel.fits);
        const auto amd = guest(host_cpu("AMD", 48, true), "x86-64-v2-AES", 64 * k_gib);
        REQUIRE(amd.bits);
        CHECK(*amd.bits == 40);
        CHECK(amd.trusted);
        CHECK(amd.window_bytes == 128 * k_gib);
        CHECK(amd.fits);
        // an A100 80 GB: 128 GiB + 32 MiB -> 256 GiB
        CHECK_FALSE(guest(host_cpu("AMD", 48, true), "x86-64-v2-AES", 256 * k_gib).fits);
        // no cpu line: qemu-server's kvm64
        const auto none = guest(host_cpu("Intel", 46, true), "", 64 * k_gib);
        CHECK(none.model == "kvm64");
        CHECK(none.bits == 40);
    }

    TEST_CASE("without pdpe1gb OVMF stops at 40 bits, whatever phys-bits asks for")
    {
        const auto intel = host_cpu("Intel", 46, true);
        CHECK(guest(intel, "x86-64-v2-AES,phys-bits=host", 64 * k_gib).bits == 40);
        CHECK(guest(intel, "kvm64,phys-bits=46", 64 * k_gib).bits == 40);
        CHECK(guest(intel, "host,flags=-pdpe1gb", 64 * k_gib).bits == 40);
        CHECK(guest(host_cpu("Intel", 46, false), "host", 64 * k_gib).bits == 40);
        const auto wide = guest(intel, "x86-64-v2-AES,flags=+pdpe1gb,phys-bits=host", 64 * k_gib);
        CHECK(wide.bits == 46);
        CHECK(wide.fits);
        CHECK(guest(intel, "host,guest-phys-bits=39", 64 * k_gib).bits == 39);
        CHECK(guest(intel, "host,phys-bits=40", 64 * k_gib).bits == 40);
    }

    TEST_CASE("a named model: QEMU's 40 bits without phys-bits; with phys-bits its pdpe1gb is unknown")
    {
        const auto intel = host_cpu("Intel", 46, true);
        CHECK(guest(intel, "Skylake-Server", 64 * k_gib).bits == 40);
        CHECK_FALSE(guest(intel, "Skylake-Server,phys-bits=46", 64 * k_gib).bits);
        scan::HostInfo unknown = intel;
        unknown.phys_address_bits.reset();
        CHECK_FALSE(guest(unknown, "host", 64 * k_gib).bits);
    }

    TEST_CASE("guest RAM counts: the dynamic window must fit above it, else OVMF's classic window goes on top of the RAM")
    {
        const auto amd = host_cpu("AMD", 48, true);
        CHECK(guest(amd, "kvm64", 64 * k_gib, 512 * 1024).fits);
        const auto big = guest(amd, "kvm64", 64 * k_gib, 900 * 1024);
        CHECK(big.window_bytes == 32 * k_gib);
        CHECK_FALSE(big.fits);
        CHECK_FALSE(guest(amd, "kvm64", 16 * k_gib, 1000 * 1024).fits); // 1000 GiB + 32 GiB does not fit in 1 TiB
    }

    TEST_CASE("plan: a qemu64-based model that is too narrow gets phys-bits=host and +pdpe1gb, with the reason")
    {
        const auto limits = shipped_limits();
        const auto intel = host_cpu("Intel", 46, true);
        const auto d = detail::plan_address_space(limits, intel, PropertyString::parse("x86-64-v2-AES,flags=+aes"), std::nullopt,
                                                  64 * k_gib, 65536, "101");
        CHECK(d.cpu.str() == "x86-64-v2-AES,flags=+aes;+pdpe1gb,phys-bits=host");
        REQUIRE(d.reason);
        CHECK(d.reason->find("need 64 GiB of MMIO") != std::string::npos);
        CHECK(d.reason->find("gives 46 bits") != std::string::npos);
        CHECK(d.warnings.empty());
        // cards whose BARs fit: nothing changes
        const auto small =
            detail::plan_address_space(limits, intel, PropertyString::parse("x86-64-v2-AES"), std::nullopt, 512 * k_mib, 65536, "101");
        CHECK(small.cpu.str() == "x86-64-v2-AES");
        CHECK_FALSE(small.reason);
        CHECK(small.warnings.empty());
        // no BAR sizes known: nothing changes
        CHECK(detail::plan_address_space(limits, intel, PropertyString::parse("kvm64"), std::nullopt, 0, 65536, "101").cpu.str()
              == "kvm64");
    }

    TEST_CASE("plan: a qemu-server without phys-bits, a host without pdpe1gb or the user's own phys-bits: kept, with a warning")
    {
        const auto limits = shipped_limits();
        auto old = host_cpu("Intel", 46, true);
        old.qemu_server_version = "6.0-15";
        auto d = detail::plan_address_space(limits, old, PropertyString::parse("kvm64"), std::nullopt, 64 * k_gib, 65536, "101");
        CHECK(d.cpu.str() == "kvm64");
        REQUIRE(d.warnings.size() == 1);
        CHECK(d.warnings[0].find("qemu-server 6.0-15 does not know the cpu option phys-bits") != std::string::npos);

        d = detail::plan_address_space(limits, host_cpu("Intel", 46, false), PropertyString::parse("kvm64"), std::nullopt, 64 * k_gib,
                                       65536, "101");
        CHECK(d.cpu.str() == "kvm64");
        REQUIRE(d.warnings.size() == 1);

        d = detail::plan_address_space(limits, host_cpu("Intel", 46, true), PropertyString::parse("host,phys-bits=40"),
                                       PropertyString::parse("host,phys-bits=40"), 64 * k_gib, 65536, "101");
        CHECK(d.cpu.str() == "host,phys-bits=40");
        REQUIRE(d.warnings.size() == 1);
        CHECK(d.warnings[0].find("VM 101: the GPUs' 64-bit BARs need 64 GiB of MMIO, but phys-bits=40 leaves OVMF 40 address bits") == 0);
    }

    TEST_CASE("plan: moving an existing VM from a narrow model to host says why in the reason")
    {
        const auto d = detail::plan_address_space(shipped_limits(), host_cpu("Intel", 46, true), PropertyString::parse("host"),
                                                  PropertyString::parse("x86-64-v2-AES"), 128 * k_gib, 131072, "101");
        CHECK(d.cpu.str() == "host");
        REQUIRE(d.reason);
        CHECK(*d.reason
              == "the GPUs' 64-bit BARs need 128 GiB of MMIO, but cpu x86-64-v2-AES without phys-bits (QEMU's default of 40 bits) leaves "
                 "OVMF 40 address bits and a 32 GiB window; cpu host gives 46 bits");
    }

    TEST_CASE("the computation is spelled out: each card's BARs, the sum, the rounding, and what the cpu gives")
    {
        scan::Inventory inv;
        add_card(inv, 0x04, 16 * k_gib);
        add_card(inv, 0x05, 32 * k_gib);
        inv.gpus[0].slot = "0000:04:00";
        inv.gpus[1].slot = "0000:05:00";
        CHECK(detail::mmio64_explained(inv, all_cards(inv))
              == "0000:04:00: 16 GiB + 32 MiB = 16416 MiB, rounded up to a multiple of its largest BAR = 32 GiB; "
                 "0000:05:00: 32 GiB + 32 MiB = 32800 MiB, rounded up to a multiple of its largest BAR = 64 GiB");
        const auto d = detail::plan_address_space(shipped_limits(), host_cpu("Intel", 46, true), PropertyString::parse("host"),
                                                  std::nullopt, 96 * k_gib, 65536, "101");
        CHECK(d.computation
              == "the BARs need 96 GiB plus 256 MiB for the VM's other devices (profiles/host/address-space.json headroom_mib); "
                 "cpu host (the host's address bits) gives the guest 46 address bits, and OVMF opens a 8192 GiB 64-bit window "
                 "(1/8 of the address space) above 65536 MiB of RAM: they fit");
        CHECK_FALSE(d.host_limit);
    }

    TEST_CASE("a host CPU whose own address bits cannot hold the BARs: no cpu setting helps, the plan is told to refuse")
    {
        const auto limits = shipped_limits();
        // Eight 128 GiB BARs (1 TiB after rounding) on a desktop CPU with 39 bits (512 GiB in all).
        const auto d = detail::plan_address_space(limits, host_cpu("Intel", 39, true), PropertyString::parse("host"), std::nullopt,
                                                  1024 * k_gib, 65536, "101");
        REQUIRE(d.host_limit);
        CHECK(*d.host_limit
              == "the host CPU has 39 physical address bits, so a guest can address at most 512 GiB (39 bits; OVMF uses at most 46), "
                 "but the GPUs' 64-bit BARs need 1024 GiB plus 256 MiB above 65536 MiB of RAM: no cpu setting can fit them");
        CHECK(d.warnings.empty());
        CHECK(detail::address_space_host_limit(limits, host_cpu("Intel", 39, true), 1024 * k_gib, 65536) == d.host_limit);
        // The same cards fit a 46-bit host; a 39-bit host holds one 128 GiB card (its own window is then the limit, not the CPU).
        CHECK_FALSE(detail::address_space_host_limit(limits, host_cpu("Intel", 46, true), 1024 * k_gib, 65536));
        CHECK_FALSE(detail::address_space_host_limit(limits, host_cpu("Intel", 39, true), 128 * k_gib, 65536));
        // Unknown host bits: nothing can be told.
        scan::HostInfo unknown;
        CHECK_FALSE(detail::address_space_host_limit(limits, unknown, 1024 * k_gib, 65536));
    }

    TEST_CASE("qemu-server versions compare by their numbers")
    {
        CHECK(util::version_at_least("9.0.25", "6.1-13"));
        CHECK(util::version_at_least("6.1-13", "6.1-13"));
        CHECK(util::version_at_least("6.1-14", "6.1-13"));
        CHECK_FALSE(util::version_at_least("6.1-12", "6.1-13"));
        CHECK_FALSE(util::version_at_least("6.0-15", "6.1-13"));
        CHECK_FALSE(util::version_at_least("", "6.1-13"));
        CHECK_FALSE(util::version_at_least("x!y", "6.1-13"));
    }

    TEST_CASE("a broken limits file names itself and the field")
    {
        CHECK_FALSE(data::parse_address_limits("{}", "f.json"));
        const auto bad = data::parse_address_limits(R"({"schema": "passthru.address-space/1", "qemu_default_phys_bits": 7})", "f.json");
        REQUIRE_FALSE(bad);
        CHECK(std::string(bad.error().what()).find("f.json: qemu_default_phys_bits must be 32-64") != std::string::npos);
        CHECK_FALSE(data::parse_address_limits("not json", "f.json"));
    }
}
