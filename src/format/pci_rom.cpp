// SPDX-License-Identifier: GPL-2.0-or-later
#include "format/pci_rom.hpp"

#include <cstdio>

namespace passthru::format::pci_rom {

namespace {

// PCI Firmware Specification 3.0, "PCI Expansion ROM Header" and "PCI Data Structure";
// the EFI fields of the header from the UEFI specification ("PCI Option ROMs").
constexpr std::size_t k_header_bytes = 0x1a;  // through the PCIR pointer
constexpr std::size_t k_pcir_ptr = 0x18;      // u16: offset of the PCI Data Structure
constexpr std::size_t k_pcir_min = 0x18;      // the fields every revision has
constexpr std::size_t k_efi_signature = 0x04; // u32 0x0EF1 in an EFI image
constexpr std::size_t k_efi_subsystem = 0x08; // u16
constexpr std::uint32_t k_efi_magic = 0x0ef1;
constexpr std::size_t k_unit = 512; // image lengths count 512-byte units
constexpr std::size_t k_max_images = 16;
constexpr std::size_t k_max_device_list = 256;
constexpr std::uint8_t k_last_image = 0x80;

class Bytes
{
public:
    explicit Bytes(std::string_view b) : m_b(b) {}
    std::size_t size() const { return m_b.size(); }
    std::uint8_t u8(std::size_t at) const { return static_cast<std::uint8_t>(m_b[at]); }
    std::uint16_t u16(std::size_t at) const { return static_cast<std::uint16_t>(u8(at) | (u8(at + 1) << 8U)); }
    std::uint32_t u32(std::size_t at) const { return u16(at) | (static_cast<std::uint32_t>(u16(at + 2)) << 16U); }
    bool has(std::size_t at, std::size_t n) const { return at <= m_b.size() && n <= m_b.size() - at; }
    std::string_view view(std::size_t at, std::size_t n) const { return m_b.substr(at, n); }

private:
    std::string_view m_b;
};

std::string hex(std::size_t v, int width = 0)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%0*zx", width, v);
    return buf;
}

std::string id_text(std::uint16_t vendor, std::uint16_t device)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04x:%04x", vendor, device);
    return buf;
}

CodeType code_type_of(std::uint8_t raw)
{
    switch (raw) {
    case 0:
        return CodeType::x86;
    case 1:
        return CodeType::open_firmware;
    case 2:
        return CodeType::pa_risc;
    case 3:
        return CodeType::efi;
    default:
        return CodeType::other;
    }
}

Verdict fail(Verdict v, Problem p, std::string detail)
{
    v.problem = p;
    v.detail = std::move(detail);
    return v;
}

// The PCIR 3.0 device list at AT, bounded by END; nullopt when it runs past END.
std::optional<std::vector<std::uint16_t>> device_list_at(const Bytes& b, std::size_t at, std::size_t end)
{
    std::vector<std::uint16_t> ids;
    for (std::size_t k = 0; k < k_max_device_list; ++k, at += 2) {
        if (at + 2 > end) {
            return std::nullopt;
        }
        const std::uint16_t id = b.u16(at);
        if (id == 0) {
            return ids;
        }
        ids.push_back(id);
    }
    return std::nullopt;
}

// The image at OFF, or the problem that stops the check there.
std::optional<std::pair<Problem, std::string>> read_image(const Bytes& b, std::size_t off, std::size_t index, Image& img)
{
    const std::string where = "image " + std::to_string(index) + " at " + hex(off);
    if (!b.has(off, k_header_bytes)) {
        return std::pair{Problem::truncated, "the file ends inside the header of " + where};
    }
    if (b.u8(off) != 0x55 || b.u8(off + 1) != 0xaa) {
        if (index == 0 && b.view(0, 4) == "NVGI") {
            return std::pair{Problem::nvflash_header, "the file starts with NVIDIA's NVGI header (an nvflash dump), not with 55 AA: "
                                                      "cut the bytes before the first 55 AA"};
        }
        return std::pair{Problem::no_signature, where + " does not start with 55 AA"};
    }
    const std::size_t pcir = off + b.u16(off + k_pcir_ptr);
    if (!b.has(pcir, k_pcir_min)) {
        return std::pair{Problem::truncated, "the PCI data structure of " + where + " lies past the end of the file"};
    }
    if (b.view(pcir, 4) != "PCIR") {
        return std::pair{Problem::no_pcir,
                         "the PCI data structure pointer of " + where + " leads to " + hex(pcir) + ", which is not 'PCIR'"};
    }
    img.offset = off;
    img.vendor = b.u16(pcir + 4);
    img.device = b.u16(pcir + 6);
    const std::uint16_t list_ptr = b.u16(pcir + 8);
    const std::uint16_t pcir_len = b.u16(pcir + 0x0a);
    img.pcir_revision = b.u8(pcir + 0x0c);
    img.class_code = b.u8(pcir + 0x0d) | (b.u8(pcir + 0x0e) << 8U) | (static_cast<std::uint32_t>(b.u8(pcir + 0x0f)) << 16U);
    img.length = static_cast<std::size_t>(b.u16(pcir + 0x10)) * k_unit;
    img.raw_code_type = b.u8(pcir + 0x14);
    img.code_type = code_type_of(img.raw_code_type);
    img.last = (b.u8(pcir + 0x15) & k_last_image) != 0;
    if (pcir_len < k_pcir_min) {
        return std::pair{Problem::pcir_length,
                         "the PCI data structure of " + where + " is " + std::to_string(pcir_len) + " bytes long, below 24"};
    }
    if (img.length == 0) {
        return std::pair{Problem::zero_length, where + " gives its length as 0"};
    }
    if (!b.has(off, img.length)) {
        return std::pair{Problem::truncated, where + " is " + std::to_string(img.length) + " bytes long, but the file ends "
                                                 + std::to_string(b.size() - off) + " bytes after its start"};
    }
    if (pcir + pcir_len > off + img.length) {
        return std::pair{Problem::no_pcir, "the PCI data structure of " + where + " runs past the image"};
    }
    if (img.pcir_revision >= 3 && list_ptr != 0) {
        auto ids = device_list_at(b, pcir + list_ptr, off + img.length);
        if (!ids) {
            return std::pair{Problem::device_list, "the device list of " + where + " runs past the image"};
        }
        img.device_list = std::move(*ids);
    }
    if (img.code_type == CodeType::x86) {
        unsigned sum = 0;
        for (std::size_t k = 0; k < img.length; ++k) {
            sum += b.u8(off + k);
        }
        if ((sum & 0xffU) != 0) {
            return std::pair{Problem::checksum, "the x86 " + where + " has a bad checksum (its bytes sum to " + hex(sum & 0xffU, 2)
                                                    + " mod 256, not 0): the file is damaged or was changed"};
        }
    } else if (img.code_type == CodeType::efi) {
        if (b.u32(off + k_efi_signature) != k_efi_magic) {
            return std::pair{Problem::efi_signature, "the EFI " + where + " lacks the EFI signature 0x0EF1"};
        }
        img.efi_subsystem = b.u16(off + k_efi_subsystem);
    }
    return std::nullopt;
}

} // namespace

bool Verdict::has_uefi() const
{
    for (const auto& i : images) {
        if (i.code_type == CodeType::efi) {
            return true;
        }
    }
    return false;
}

bool Verdict::has_legacy() const
{
    for (const auto& i : images) {
        if (i.code_type == CodeType::x86) {
            return true;
        }
    }
    return false;
}

std::string Verdict::summary() const
{
    std::string out;
    for (const auto& i : images) {
        std::string kind = i.code_type == CodeType::x86             ? "x86 (legacy BIOS)"
                           : i.code_type == CodeType::efi           ? (i.efi_subsystem == 11 ? "UEFI (GOP driver)" : "UEFI")
                           : i.code_type == CodeType::open_firmware ? "Open Firmware"
                                                                    : "code type " + std::to_string(i.raw_code_type);
        out += (out.empty() ? "" : " + ") + kind + " for " + id_text(i.vendor, i.device);
    }
    return out;
}

Verdict check(std::string_view bytes)
{
    Verdict v;
    const Bytes b(bytes);
    if (bytes.empty()) {
        return fail(std::move(v), Problem::empty, "the file is empty");
    }
    std::size_t off = 0;
    while (true) {
        if (v.images.size() == k_max_images) {
            return fail(std::move(v), Problem::too_many_images,
                        "more than " + std::to_string(k_max_images) + " images, none marked the last");
        }
        Image img;
        if (auto problem = read_image(b, off, v.images.size(), img)) {
            return fail(std::move(v), problem->first, problem->second);
        }
        v.images.push_back(img);
        off += img.length;
        if (img.last) {
            return v; // what follows the last image (a ROM BAR's padding) is not read
        }
        if (off >= bytes.size()) {
            std::string why = "the file ends after image " + std::to_string(v.images.size() - 1) + ", which does not say it is the last";
            return fail(std::move(v), Problem::no_last_image, std::move(why));
        }
    }
}

Verdict check_for(std::string_view bytes, std::uint16_t vendor, std::uint16_t device)
{
    Verdict v = check(bytes);
    if (!v.ok()) {
        return v;
    }
    for (const auto& i : v.images) {
        if (i.vendor != vendor) {
            continue;
        }
        if (i.device == device) {
            return v;
        }
        for (const auto id : i.device_list) {
            if (id == device) {
                return v;
            }
        }
    }
    std::string why = "the ROM is for " + v.summary() + ", not for the card's " + id_text(vendor, device);
    return fail(std::move(v), Problem::id_mismatch, std::move(why));
}

std::string_view to_string(Problem problem)
{
    switch (problem) {
    case Problem::empty:
        return "empty";
    case Problem::no_signature:
        return "no-signature";
    case Problem::nvflash_header:
        return "nvflash-header";
    case Problem::truncated:
        return "truncated";
    case Problem::no_pcir:
        return "no-pcir";
    case Problem::pcir_length:
        return "pcir-length";
    case Problem::zero_length:
        return "zero-length";
    case Problem::device_list:
        return "device-list";
    case Problem::checksum:
        return "checksum";
    case Problem::efi_signature:
        return "efi-signature";
    case Problem::no_last_image:
        return "no-last-image";
    case Problem::too_many_images:
        return "too-many-images";
    case Problem::id_mismatch:
        return "id-mismatch";
    }
    return "unknown";
}

} // namespace passthru::format::pci_rom
