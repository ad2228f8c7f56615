// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/libpci.hpp"

extern "C" {
#include <pci/pci.h>
}

#include <algorithm>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace passthru::scan {

namespace {

// The jump target of the libpci call in progress (one at a time per thread).
thread_local std::jmp_buf* t_jump = nullptr;
thread_local char t_message[512];
thread_local std::vector<std::string>* t_warnings = nullptr;

// The callbacks carry the attributes of libpci's own pointer types (printf
// format, and no return for the error one), so the assignments below match.
PCI_PRINTF(1, 2) PCI_NONRET void on_error(char* msg, ...)
{
    va_list args;
    va_start(args, msg);
    std::vsnprintf(t_message, sizeof t_message, msg, args);
    va_end(args);
    if (t_jump != nullptr) {
        std::longjmp(*t_jump, 1);
    }
    // Not inside a guarded call: there is no safe way to continue.
    std::fprintf(stderr, "passthru: error: libpci: %s\n", t_message);
    std::abort();
}

PCI_PRINTF(1, 2) void on_warning(char* msg, ...)
{
    char buf[512];
    va_list args;
    va_start(args, msg);
    std::vsnprintf(buf, sizeof buf, msg, args);
    va_end(args);
    if (t_warnings != nullptr) {
        t_warnings->emplace_back(buf);
    }
}

void on_debug(char*, ...) {}

} // namespace

// Runs `body` with libpci's error callback able to jump back here. Only
// trivially destructible state may live between setjmp and the C calls.
#define PASSTHRU_PCI_GUARDED(fallback, body)                                                                                               \
    do {                                                                                                                                   \
        std::jmp_buf jump;                                                                                                                 \
        std::jmp_buf* const previous = t_jump;                                                                                             \
        t_warnings = &m_warnings;                                                                                                          \
        if (setjmp(jump) != 0) {                                                                                                           \
            t_jump = previous;                                                                                                             \
            m_warnings.emplace_back(std::string("libpci: ") + t_message);                                                                  \
            return fallback;                                                                                                               \
        }                                                                                                                                  \
        t_jump = &jump;                                                                                                                    \
        body;                                                                                                                              \
        t_jump = previous;                                                                                                                 \
    } while (false)

LibPci::LibPci(const std::string& sysfs_bus_pci)
{
    m_access = pci_alloc();
    if (m_access == nullptr) {
        return;
    }
    m_access->error = on_error;
    m_access->warning = on_warning;
    m_access->debug = on_debug;
    m_access->method = PCI_ACCESS_SYS_BUS_PCI;
    // Names come from this machine's pci.ids (passthru's data), as with lspci.
    std::jmp_buf jump;
    t_warnings = &m_warnings;
    if (setjmp(jump) != 0) {
        t_jump = nullptr;
        m_warnings.emplace_back(std::string("libpci: ") + t_message);
        return;
    }
    t_jump = &jump;
    pci_set_param(m_access, const_cast<char*>("sysfs.path"), const_cast<char*>(sysfs_bus_pci.c_str()));
    // Names from pci.ids only: not from this machine's udev hwdb, and not
    // from the caller's ~/.pciids-cache, so the answer does not depend on
    // the machine passthru runs on (an empty cache name turns the cache off).
    pci_set_param(m_access, const_cast<char*>("hwdb.disable"), const_cast<char*>("1"));
    pci_set_param(m_access, const_cast<char*>("net.cache_name"), const_cast<char*>(""));
    pci_init(m_access);
    t_jump = nullptr;
}

LibPci::~LibPci()
{
    if (m_access != nullptr) {
        std::jmp_buf jump;
        if (setjmp(jump) == 0) {
            t_jump = &jump;
            pci_cleanup(m_access);
        }
        t_jump = nullptr;
    }
}

std::string LibPci::lookup(int flags, int a, int b)
{
    if (m_access == nullptr) {
        return {};
    }
    char buf[256];
    const char* name = nullptr;
    PASSTHRU_PCI_GUARDED(std::string{}, name = pci_lookup_name(m_access, buf, sizeof buf, flags | PCI_LOOKUP_NO_NUMBERS, a, b));
    return name != nullptr ? std::string(name) : std::string{};
}

std::string LibPci::vendor_name(std::uint16_t vendor)
{
    return lookup(PCI_LOOKUP_VENDOR, vendor, 0);
}

std::string LibPci::device_name(std::uint16_t vendor, std::uint16_t device)
{
    return lookup(PCI_LOOKUP_DEVICE, vendor, device);
}

std::string LibPci::class_name(std::uint16_t class16)
{
    return lookup(PCI_LOOKUP_CLASS, class16, 0);
}

namespace {

// What parse_config reads through libpci. Filled by read_raw_config() through
// a reference, so nothing the long jump could clobber lives in registers of
// the function that calls setjmp.
struct RawConfig
{
    pci_dev* dev = nullptr;
    int known = 0;
    u16 subsys_vendor = 0;
    u16 subsys_device = 0;
    u8 revision = 0;
    u8 header = 0;
    pci_cap* exp = nullptr;
    pci_cap* acs = nullptr;
    pci_cap* sriov = nullptr;
    u32 lnkcap = 0;
    u32 lnkcap2 = 0;
    u16 lnksta = 0;
    u16 exp_flags = 0;
};

[[gnu::noinline]] void read_raw_config(pci_access* access, const PciAddress& addr, u8* cache, int len, RawConfig& raw)
{
    raw.dev = pci_get_dev(access, static_cast<int>(addr.domain), addr.bus, addr.device, addr.function);
    if (raw.dev == nullptr) {
        return;
    }
    pci_setup_cache(raw.dev, cache, len);
    raw.revision = pci_read_byte(raw.dev, PCI_REVISION_ID);
    raw.header = pci_read_byte(raw.dev, PCI_HEADER_TYPE);
    if ((raw.header & 0x7f) == PCI_HEADER_TYPE_NORMAL) {
        raw.subsys_vendor = pci_read_word(raw.dev, PCI_SUBSYSTEM_VENDOR_ID);
        raw.subsys_device = pci_read_word(raw.dev, PCI_SUBSYSTEM_ID);
    }
    // Capabilities only from bytes we have: libpci would otherwise go back to
    // the file for what lies beyond the cache.
    if (len < 256) {
        return;
    }
    raw.known = pci_fill_info(raw.dev, PCI_FILL_CAPS | (len >= 4096 ? PCI_FILL_EXT_CAPS : 0));
    raw.exp = pci_find_cap(raw.dev, PCI_CAP_ID_EXP, PCI_CAP_NORMAL);
    if (raw.exp != nullptr && static_cast<int>(raw.exp->addr) + PCI_EXP_LNKCAP2 + 4 <= len) {
        raw.exp_flags = pci_read_word(raw.dev, raw.exp->addr + PCI_EXP_FLAGS);
        raw.lnkcap = pci_read_long(raw.dev, raw.exp->addr + PCI_EXP_LNKCAP);
        raw.lnksta = pci_read_word(raw.dev, raw.exp->addr + PCI_EXP_LNKSTA);
        raw.lnkcap2 = pci_read_long(raw.dev, raw.exp->addr + PCI_EXP_LNKCAP2);
    }
    if ((raw.known & PCI_FILL_EXT_CAPS) != 0) {
        raw.acs = pci_find_cap(raw.dev, PCI_EXT_CAP_ID_ACS, PCI_CAP_EXTENDED);
        raw.sriov = pci_find_cap(raw.dev, PCI_EXT_CAP_ID_SRIOV, PCI_CAP_EXTENDED);
    }
}

} // namespace

LibPci::ConfigFacts LibPci::parse_config(const PciAddress& addr, std::string& bytes)
{
    ConfigFacts facts;
    if (m_access == nullptr || bytes.size() < 64) {
        return facts;
    }
    const int len = static_cast<int>(std::min<std::size_t>(bytes.size(), 4096));
    auto* cache = reinterpret_cast<u8*>(bytes.data());
    RawConfig raw;
    PASSTHRU_PCI_GUARDED(facts, read_raw_config(m_access, addr, cache, len, raw));
    pci_dev* const dev = raw.dev;
    const int known = raw.known;
    const u16 subsys_vendor = raw.subsys_vendor;
    const u16 subsys_device = raw.subsys_device;
    const u8 revision = raw.revision;
    const u8 header = raw.header;
    pci_cap* const exp = raw.exp;
    pci_cap* const acs = raw.acs;
    pci_cap* const sriov = raw.sriov;
    u32 lnkcap = raw.lnkcap;
    u32 lnkcap2 = raw.lnkcap2;
    u16 lnksta = raw.lnksta;
    const u16 exp_flags = raw.exp_flags;
    if (dev == nullptr) {
        return facts;
    }
    facts.revision = revision;
    facts.header_type = header;
    if ((header & 0x7f) == PCI_HEADER_TYPE_NORMAL) {
        facts.subsystem_vendor = subsys_vendor;
        facts.subsystem_device = subsys_device;
    }
    if (len >= 256) {
        facts.pcie = exp != nullptr;
        if (exp != nullptr) {
            // As the kernel reports it (drivers/pci/pci-sysfs.c, access.c):
            // only ports, endpoints and PCIe bridges implement the link
            // registers, others read as 0 ("Unknown", width 0, max 255), and
            // Link Capabilities 2 exists from capability version 2 on.
            const int type = (exp_flags >> 4) & 0xf;
            const int version = exp_flags & 0xf;
            const bool has_link = type == 0 || type == 1 || (type >= 4 && type <= 8);
            if (!has_link) {
                lnkcap = 0;
                lnksta = 0;
            }
            if (!has_link || version < 2) {
                lnkcap2 = 0;
            }
            facts.link_speed = lnksta & PCI_EXP_LNKSTA_SPEED;
            facts.link_width = (lnksta & PCI_EXP_LNKSTA_WIDTH) >> 4;
            facts.max_link_width = lnkcap != 0 ? static_cast<int>((lnkcap & PCI_EXP_LNKCAP_WIDTH) >> 4) : 0xff;
            // pcie_get_speed_cap(): the Supported Link Speeds vector of Link
            // Capabilities 2 when present, else the Max Link Speed field.
            const u32 vector = (lnkcap2 >> 1) & 0x3f;
            int max_speed = static_cast<int>(lnkcap & PCI_EXP_LNKCAP_SPEED);
            if (vector != 0) {
                for (int bit = 5; bit >= 0; --bit) {
                    if ((vector >> bit) & 1U) {
                        max_speed = bit + 1;
                        break;
                    }
                }
            }
            facts.max_link_speed = max_speed;
        }
        if ((known & PCI_FILL_EXT_CAPS) != 0) {
            facts.acs = acs != nullptr;
            facts.sriov = sriov != nullptr;
        }
    }
    PASSTHRU_PCI_GUARDED(facts, pci_free_dev(dev));
    return facts;
}

} // namespace passthru::scan
