// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/kernel_cutoffs.hpp"

#include "data/schema.hpp"
#include "util/strings.hpp"

namespace passthru::data {

namespace {

constexpr std::string_view k_cutoffs_schema = "passthru.kernel-cutoffs/1";

// The fields of the file, each a KernelCutoffs member.
struct CutoffField
{
    const char* name;
    KernelVersion KernelCutoffs::*member;
};
constexpr CutoffField k_cutoff_fields[] = {
    {"vfio_virqfd_in_vfio", &KernelCutoffs::vfio_virqfd_in_vfio},
    {"intel_iommu_default_on", &KernelCutoffs::intel_iommu_default_on},
    {"sysfb_simple_framebuffer", &KernelCutoffs::sysfb_simple_framebuffer},
};

// "6.2" exactly: digits, one dot, digits.
std::optional<KernelVersion> cutoff_version(const std::string& text)
{
    const auto dot = text.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == text.size() || text.find_first_not_of("0123456789.") != std::string::npos
        || text.find('.', dot + 1) != std::string::npos) {
        return std::nullopt;
    }
    return util::major_minor(text);
}

KernelCutoffs parse_cutoffs(const data::Field& doc)
{
    doc.only_fields({"schema", "comment", k_cutoff_fields[0].name, k_cutoff_fields[1].name, k_cutoff_fields[2].name}, k_cutoffs_schema);
    KernelCutoffs out{};
    for (const auto& field : k_cutoff_fields) {
        const auto value = doc[field.name];
        std::optional<KernelVersion> version;
        if (const auto text = value.if_string()) {
            version = cutoff_version(*text);
        }
        if (!version) {
            value.fail("must be a kernel release \"MAJOR.MINOR\" (e.g. \"6.2\")");
        }
        out.*field.member = *version;
    }
    return out;
}

} // namespace

std::string KernelCutoffs::text(const KernelVersion& version)
{
    return std::to_string(version.first) + "." + std::to_string(version.second);
}

Result<KernelCutoffs> parse_kernel_cutoffs(std::string_view json_text, const std::string& where)
{
    return load<KernelCutoffs>(json_text, where, k_cutoffs_schema, parse_cutoffs);
}

Result<KernelCutoffs> load_kernel_cutoffs(const DataDir& data)
{
    return data.load_profile("host/kernel.json", parse_kernel_cutoffs);
}

} // namespace passthru::data
