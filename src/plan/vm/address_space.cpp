// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/vm/address_space.hpp"

#include <algorithm>

#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

constexpr std::uint64_t k_mib = 1ULL << 20;
constexpr int k_max_bits = 64;

bool contains(const std::vector<std::string>& list, std::string_view item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

std::uint64_t pow2(int bits)
{
    return bits >= k_max_bits ? ~0ULL : (1ULL << bits);
}

// A BAR no machine can address (a garbled resource file) counts as this.
constexpr std::uint64_t k_max_bar = 1ULL << 56;

// Rounds N up to a multiple of the power of two ALIGN.
std::uint64_t align_up(std::uint64_t n, std::uint64_t align)
{
    return align == 0 ? n : (n + align - 1) & ~(align - 1);
}

// The largest power of two <= N (N > 0).
std::uint64_t floor_pow2(std::uint64_t n)
{
    std::uint64_t p = 1;
    while (p <= n / 2) {
        p *= 2;
    }
    return p;
}

// Bits the cpu line asks QEMU for: phys-bits=N, phys-bits=host or the
// model's host-phys-bits, else QEMU's default; nullopt: the host's are unknown.
std::optional<int> requested_bits(const AddressLimits& limits, const scan::HostInfo& host, const format::pve::PropertyString& cpu,
                                  const std::string& model, std::string& why)
{
    const auto phys = cpu.get("phys-bits");
    if (phys && *phys != "host") {
        why = "phys-bits=" + *phys;
        const auto n = util::parse_int(*phys);
        return n ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
    }
    if (phys || contains(limits.host_phys_bits_models, model)) {
        why = phys ? "phys-bits=host" : "cpu " + model + " (the host's address bits)";
        return host.phys_address_bits;
    }
    why = "cpu " + model + " without phys-bits (QEMU's default of " + std::to_string(limits.qemu_default_phys_bits) + " bits)";
    return limits.qemu_default_phys_bits;
}

// pdpe1gb in the guest: the line's flag, else the host's for host models,
// false for qemu64/kvm64 models; nullopt for other named models.
std::optional<bool> guest_pdpe1gb(const AddressLimits& limits, const scan::HostInfo& host, const format::pve::PropertyString& cpu,
                                  const std::string& model)
{
    for (const auto& flag : util::split(cpu.get("flags").value_or(""), ";")) {
        if (flag == "+pdpe1gb") {
            return contains(limits.host_phys_bits_models, model) && host.pdpe1gb == false ? std::optional<bool>(false) : true;
        }
        if (flag == "-pdpe1gb") {
            return false;
        }
    }
    if (contains(limits.host_phys_bits_models, model)) {
        return host.pdpe1gb;
    }
    if (contains(limits.qemu64_models, model)) {
        return false;
    }
    return std::nullopt;
}

bool trusted_width(const AddressLimits& limits, const scan::HostInfo& host, int bits)
{
    if (bits >= limits.ovmf_trusted_min_bits) {
        return true;
    }
    // Under KVM every model reports the host's CPU vendor.
    const auto vendor = limits.ovmf_trusted_bits_by_vendor.find(host.cpu_vendor);
    return vendor != limits.ovmf_trusted_bits_by_vendor.end()
           && std::find(vendor->second.begin(), vendor->second.end(), bits) != vendor->second.end();
}

} // namespace

std::uint64_t mmio64_needed(const scan::Inventory& inventory, const std::vector<const scan::GpuCard*>& cards)
{
    std::uint64_t total = 0;
    for (const auto* card : cards) {
        std::uint64_t sum = 0;
        std::uint64_t largest = 0;
        for (const auto& fn : card->functions) {
            const auto* dev = inventory.find(fn);
            if (dev == nullptr) {
                continue;
            }
            for (const auto& bar : dev->mem_bars) {
                if (bar.is_64bit && bar.prefetchable) {
                    const std::uint64_t size = std::min(bar.size == 0 ? k_max_bar : bar.size, k_max_bar);
                    sum = std::min(sum + size, k_max_bar);
                    largest = std::max(largest, size);
                }
            }
        }
        total = std::min(total + align_up(sum, largest == 0 ? 0 : floor_pow2(largest)), k_max_bar);
    }
    return total;
}

namespace {

// Exact: "32 GiB", "16416 MiB".
std::string exact_size(std::uint64_t bytes)
{
    constexpr std::uint64_t k_gib = 1ULL << 30;
    return bytes % k_gib == 0   ? std::to_string(bytes / k_gib) + " GiB"
           : bytes % k_mib == 0 ? std::to_string(bytes / k_mib) + " MiB"
                                : std::to_string(bytes) + " bytes";
}

} // namespace

std::string mmio64_explained(const scan::Inventory& inventory, const std::vector<const scan::GpuCard*>& cards)
{
    std::vector<std::string> parts;
    for (const auto* card : cards) {
        std::vector<std::string> bars;
        std::uint64_t sum = 0;
        std::uint64_t largest = 0;
        for (const auto& fn : card->functions) {
            const auto* dev = inventory.find(fn);
            for (const auto& bar : dev != nullptr ? dev->mem_bars : std::vector<scan::MemBar>{}) {
                if (bar.is_64bit && bar.prefetchable) {
                    const std::uint64_t size = std::min(bar.size == 0 ? k_max_bar : bar.size, k_max_bar);
                    bars.push_back(exact_size(size));
                    sum = std::min(sum + size, k_max_bar);
                    largest = std::max(largest, size);
                }
            }
        }
        if (bars.empty()) {
            parts.push_back(card->slot + ": no 64-bit prefetchable BAR");
            continue;
        }
        const std::uint64_t aligned = align_up(sum, floor_pow2(largest));
        parts.push_back(card->slot + ": " + util::join(bars, " + ") + (bars.size() == 1 ? std::string() : " = " + exact_size(sum))
                        + (aligned == sum ? std::string() : ", rounded up to a multiple of its largest BAR = " + exact_size(aligned)));
    }
    return util::join(parts, "; ");
}

bool is_qemu64_model(const AddressLimits& limits, const format::pve::PropertyString& cpu)
{
    return contains(limits.qemu64_models, cpu.get("").value_or(cpu.get("cputype").value_or(limits.default_model)));
}

GuestAddressing guest_addressing(const AddressLimits& limits, const scan::HostInfo& host, const format::pve::PropertyString& cpu,
                                 std::uint64_t mmio64, std::uint64_t ram_mib)
{
    GuestAddressing g;
    g.model = cpu.get("").value_or(cpu.get("cputype").value_or(limits.default_model));
    auto bits = requested_bits(limits, host, cpu, g.model, g.why);
    g.pdpe1gb = guest_pdpe1gb(limits, host, cpu, g.model);
    if (!bits) {
        return g; // the host's address bits are unknown
    }
    if (const auto gpb = util::parse_int(cpu.get("guest-phys-bits").value_or("")); gpb && *gpb < *bits) {
        bits = static_cast<int>(*gpb);
        g.why = "guest-phys-bits=" + std::to_string(*gpb);
    }
    bits = std::min(*bits, limits.ovmf_max_phys_bits);
    if (*bits > limits.ovmf_no_1g_pages_max_bits && g.pdpe1gb != true) {
        if (!g.pdpe1gb) {
            return g; // a named model: its pdpe1gb is unknown
        }
        bits = limits.ovmf_no_1g_pages_max_bits;
        g.why = "no pdpe1gb flag (OVMF then stops at " + std::to_string(limits.ovmf_no_1g_pages_max_bits) + " bits)";
    }
    g.bits = bits;
    const std::uint64_t space = pow2(*bits);
    const std::uint64_t ram_end = (std::min(ram_mib, k_max_bar / k_mib) + limits.ram_start_mib) * k_mib;
    const std::uint64_t need = mmio64 + limits.headroom_mib * k_mib;
    g.trusted = trusted_width(limits, host, *bits);
    g.window_bytes = pow2(*bits - limits.ovmf_window_fraction_shift);
    const std::uint64_t classic = limits.ovmf_classic_window_mib * k_mib;
    if (!g.trusted || g.window_bytes <= classic || ram_end + g.window_bytes >= space) {
        // OVMF's classic window, right above the RAM
        g.window_bytes = classic;
        g.fits = need <= g.window_bytes && (!g.trusted || ram_end + g.window_bytes <= space);
    } else {
        g.fits = need <= g.window_bytes;
    }
    return g;
}

namespace {

bool has_flag(const format::pve::PropertyString& cpu, std::string_view flag)
{
    return contains(util::split(cpu.get("flags").value_or(""), ";"), flag);
}

// The cpu line the plan writes for a qemu64/kvm64 model whose 40 bits are too
// few, or nullopt when it cannot (docs/facts.md: address-space).
std::optional<format::pve::PropertyString> widened_cpu(const AddressLimits& limits, const scan::HostInfo& host,
                                                       const format::pve::PropertyString& planned, std::string& blocker)
{
    if (!is_qemu64_model(limits, planned) || planned.get("phys-bits") || planned.get("guest-phys-bits") || has_flag(planned, "-pdpe1gb")) {
        return std::nullopt; // not a model the plan widens, or the user's own setting
    }
    if (host.pdpe1gb != true || !host.phys_address_bits) {
        blocker = "the host CPU's pdpe1gb flag or address size is unknown or missing";
        return std::nullopt;
    }
    if (host.qemu_server_version && !util::version_at_least(*host.qemu_server_version, limits.phys_bits_since_qemu_server)) {
        blocker = "qemu-server " + *host.qemu_server_version + " does not know the cpu option phys-bits (it came with "
                  + limits.phys_bits_since_qemu_server + ")";
        return std::nullopt;
    }
    format::pve::PropertyString cpu = planned;
    cpu.set("phys-bits", "host");
    auto flags = util::split(cpu.get("flags").value_or(""), ";");
    std::erase(flags, std::string());
    flags.emplace_back("+pdpe1gb");
    cpu.set("flags", util::join(flags, ";"));
    return cpu;
}

// What CPU gives the guest against the need, in one sentence.
std::string computation(const AddressLimits& limits, const GuestAddressing& g, std::uint64_t mmio64, std::uint64_t ram_mib)
{
    return "the BARs need " + size_text(mmio64) + " plus " + size_text(limits.headroom_mib * k_mib)
           + " for the VM's other devices (profiles/host/address-space.json headroom_mib); " + g.why + " gives the guest "
           + std::to_string(*g.bits) + " address bits, and OVMF opens a " + size_text(g.window_bytes) + " 64-bit window ("
           + (g.trusted && g.window_bytes > limits.ovmf_classic_window_mib * k_mib
                  ? "1/" + std::to_string(1U << static_cast<unsigned>(limits.ovmf_window_fraction_shift)) + " of the address space"
                  : std::string("OVMF's classic window"))
           + ") above " + std::to_string(ram_mib) + " MiB of RAM: " + (g.fits ? "they fit" : "they do not fit");
}

// Set when the host CPU cannot address the BARs and the RAM at all: the
// guest's address space is at most the host's bits (what host-phys-bits passes
// on), capped by OVMF; no cpu setting or window size can go beyond it.
std::optional<std::string> host_limit_text(const AddressLimits& limits, const scan::HostInfo& host, std::uint64_t mmio64,
                                           std::uint64_t ram_mib)
{
    if (!host.phys_address_bits) {
        return std::nullopt;
    }
    const int cap = host.pdpe1gb == true ? limits.ovmf_max_phys_bits : limits.ovmf_no_1g_pages_max_bits;
    const int bits = std::min(*host.phys_address_bits, cap);
    const std::uint64_t ram_end = (std::min(ram_mib, k_max_bar / k_mib) + limits.ram_start_mib) * k_mib;
    const std::uint64_t need = mmio64 + limits.headroom_mib * k_mib;
    if (ram_end + need <= pow2(bits)) {
        return std::nullopt;
    }
    return "the host CPU has " + std::to_string(*host.phys_address_bits) + " physical address bits, so a guest can address at most "
           + size_text(pow2(bits)) + " (" + std::to_string(bits) + " bits; OVMF uses at most " + std::to_string(cap)
           + (host.pdpe1gb == true ? "" : " without pdpe1gb") + "), but the GPUs' 64-bit BARs need " + size_text(mmio64) + " plus "
           + size_text(limits.headroom_mib * k_mib) + " above " + std::to_string(ram_mib) + " MiB of RAM: no cpu setting can fit them";
}

std::string shortfall(const GuestAddressing& g, std::uint64_t mmio64)
{
    return "the GPUs' 64-bit BARs need " + size_text(mmio64) + " of MMIO, but " + g.why + " leaves OVMF " + std::to_string(*g.bits)
           + " address bits and a " + size_text(g.window_bytes) + " window";
}

} // namespace

AddressDecision plan_address_space(const AddressLimits& limits, const scan::HostInfo& host, const format::pve::PropertyString& planned,
                                   const std::optional<format::pve::PropertyString>& current, std::uint64_t mmio64, std::uint64_t ram_mib,
                                   const std::string& vm_id)
{
    AddressDecision d{planned, std::nullopt, {}, {}, std::nullopt};
    if (mmio64 == 0) {
        return d; // no 64-bit BAR sizes known
    }
    const GuestAddressing g = guest_addressing(limits, host, planned, mmio64, ram_mib);
    if (!g.bits) {
        return d; // cannot tell: unknown host address size or a named model
    }
    d.computation = computation(limits, g, mmio64, ram_mib);
    if (!g.fits) {
        d.host_limit = host_limit_text(limits, host, mmio64, ram_mib);
        if (d.host_limit) {
            return d; // no cpu setting helps
        }
    }
    if (g.fits) {
        if (current) {
            const GuestAddressing before = guest_addressing(limits, host, *current, mmio64, ram_mib);
            if (before.bits && !before.fits) {
                d.reason = shortfall(before, mmio64) + "; cpu " + g.model + " gives " + std::to_string(*g.bits) + " bits";
            }
        }
        return d;
    }
    std::string blocker;
    if (auto wide = widened_cpu(limits, host, planned, blocker)) {
        const GuestAddressing w = guest_addressing(limits, host, *wide, mmio64, ram_mib);
        if (w.bits && w.fits) {
            d.computation = computation(limits, w, mmio64, ram_mib);
            d.reason = shortfall(g, mmio64) + "; phys-bits=host with +pdpe1gb gives " + std::to_string(*w.bits) + " bits and a "
                       + size_text(w.window_bytes) + " window";
            d.cpu = *wide;
            return d;
        }
    }
    d.warnings.push_back("VM " + vm_id + ": " + shortfall(g, mmio64) + " (" + std::to_string(ram_mib)
                         + " MiB of RAM): the guest may not boot, or a GPU gets no BAR" + (blocker.empty() ? "" : "; " + blocker)
                         + ". Use cpu host without phys-bits/guest-phys-bits limits and without -pdpe1gb, or add phys-bits=host "
                           "and flags=+pdpe1gb (qm set "
                         + vm_id + " --cpu ...)");
    return d;
}

std::optional<std::string> address_space_host_limit(const AddressLimits& limits, const scan::HostInfo& host, std::uint64_t mmio64,
                                                    std::uint64_t ram_mib)
{
    return host_limit_text(limits, host, mmio64, ram_mib);
}

std::string size_text(std::uint64_t bytes)
{
    constexpr std::uint64_t k_gib = 1ULL << 30;
    if (bytes >= k_gib && bytes % k_gib == 0) {
        return std::to_string(bytes / k_gib) + " GiB";
    }
    if (bytes >= k_gib) {
        return std::to_string((bytes + k_gib / 2) / k_gib) + " GiB";
    }
    return std::to_string((bytes + k_mib - 1) / k_mib) + " MiB";
}

} // namespace passthru::plan::detail
