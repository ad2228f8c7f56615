// SPDX-License-Identifier: GPL-2.0-or-later
#include "scan/kernel_cutoffs.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "util/json.hpp"
#include "util/strings.hpp"

namespace passthru::scan {

namespace {

constexpr std::string_view k_schema = "passthru.kernel-cutoffs/1";

// The fields of the file, each a KernelCutoffs member.
struct Field
{
    const char* name;
    KernelVersion KernelCutoffs::*member;
};
constexpr Field k_fields[] = {
    {"vfio_virqfd_in_vfio", &KernelCutoffs::vfio_virqfd_in_vfio},
    {"intel_iommu_default_on", &KernelCutoffs::intel_iommu_default_on},
    {"sysfb_simple_framebuffer", &KernelCutoffs::sysfb_simple_framebuffer},
};

// "6.2" exactly: digits, one dot, digits.
std::optional<KernelVersion> parse_version(const std::string& text)
{
    const auto dot = text.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == text.size() || text.find_first_not_of("0123456789.") != std::string::npos
        || text.find('.', dot + 1) != std::string::npos) {
        return std::nullopt;
    }
    return util::major_minor(text);
}

} // namespace

std::string KernelCutoffs::text(const KernelVersion& version)
{
    return std::to_string(version.first) + "." + std::to_string(version.second);
}

Result<KernelCutoffs> parse_kernel_cutoffs(std::string_view json_text, const std::string& where)
{
    const auto parsed = util::parse_json(json_text, where, Errc::usage);
    if (!parsed) {
        return tl::unexpected(parsed.error());
    }
    const auto& doc = *parsed;
    if (!doc.is_object() || !doc.contains("schema") || doc["schema"] != k_schema) {
        return fail(Errc::usage, where + ": schema must be \"" + std::string(k_schema) + "\"");
    }
    for (const auto& item : doc.items()) {
        // The key by name, not a structured binding: clang before 16 cannot capture those in a lambda.
        const std::string& key = item.key();
        const bool known = key == "schema" || key == "comment"
                           || std::any_of(std::begin(k_fields), std::end(k_fields), [&](const Field& f) { return key == f.name; });
        if (!known) {
            return fail(Errc::usage, where + ": " + key + " is not a field of " + std::string(k_schema));
        }
    }
    KernelCutoffs out{};
    for (const auto& field : k_fields) {
        const auto it = doc.find(field.name);
        std::optional<KernelVersion> version;
        if (it != doc.end() && it->is_string()) {
            version = parse_version(it->get<std::string>());
        }
        if (!version) {
            return fail(Errc::usage, where + ": " + field.name + " must be a kernel release \"MAJOR.MINOR\" (e.g. \"6.2\")");
        }
        out.*field.member = *version;
    }
    return out;
}

} // namespace passthru::scan
