// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/address_space.hpp"

#include <algorithm>

#include "data/schema.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::data {

namespace {

constexpr std::string_view k_address_schema = "passthru.address-space/1";
constexpr int k_most_address_bits = 64;
// A MiB count of the file times 2^20 stays within 2^56, the largest BAR counted.
constexpr std::uint64_t k_most_mib = std::uint64_t{1} << 36;

int bits_of(const Field& f)
{
    const auto v = f.integer();
    if (v < 32 || v > k_most_address_bits) {
        f.fail("must be 32-64");
    }
    return static_cast<int>(v);
}

std::uint64_t mib_of(const Field& f)
{
    const auto v = f.integer();
    if (v < 0 || static_cast<std::uint64_t>(v) > k_most_mib) {
        f.fail("must be 0 to 2^36 (MiB)");
    }
    return static_cast<std::uint64_t>(v);
}

std::vector<std::string> model_names(const Field& f)
{
    std::vector<std::string> names;
    for (std::size_t i = 0; i < f.size(); ++i) {
        auto n = f[i].string();
        if (n.empty() || !util::lex::all_of(n, [](char c) { return util::lex::is_alnum(c) || c == '-' || c == '_' || c == '.'; })) {
            f[i].fail("is not a CPU model name: '" + n + "'");
        }
        names.push_back(std::move(n));
    }
    return names;
}

std::map<std::string, std::vector<int>> bits_by_vendor(const Field& f)
{
    f.object();
    std::map<std::string, std::vector<int>> out;
    for (const auto& key : f.keys()) {
        auto& bits = out[key];
        for (const auto& bit : f[key].elements()) {
            bits.push_back(static_cast<int>(bit.integer()));
        }
    }
    return out;
}

bool listed_model(const std::vector<std::string>& list, const std::string& item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

AddressLimits parse_limits(const Field& j)
{
    j.only_fields({"schema", "comment", "qemu_default_phys_bits", "host_phys_bits_models", "qemu64_models", "default_model",
                   "ovmf_max_phys_bits", "ovmf_no_1g_pages_max_bits", "ovmf_trusted_min_bits", "ovmf_trusted_bits_by_vendor",
                   "ovmf_window_fraction_shift", "ovmf_classic_window_mib", "ram_start_mib", "headroom_mib", "phys_bits_since_qemu_server"},
                  k_address_schema);
    AddressLimits l;
    l.qemu_default_phys_bits = bits_of(j["qemu_default_phys_bits"]);
    l.host_phys_bits_models = model_names(j["host_phys_bits_models"]);
    l.qemu64_models = model_names(j["qemu64_models"]);
    l.default_model = j["default_model"].string();
    l.ovmf_max_phys_bits = bits_of(j["ovmf_max_phys_bits"]);
    l.ovmf_no_1g_pages_max_bits = bits_of(j["ovmf_no_1g_pages_max_bits"]);
    l.ovmf_trusted_min_bits = bits_of(j["ovmf_trusted_min_bits"]);
    l.ovmf_trusted_bits_by_vendor = bits_by_vendor(j["ovmf_trusted_bits_by_vendor"]);
    const auto shift = j["ovmf_window_fraction_shift"].integer();
    if (shift < 1 || shift > 16) {
        j["ovmf_window_fraction_shift"].fail("must be 1-16");
    }
    l.ovmf_window_fraction_shift = static_cast<int>(shift);
    l.ovmf_classic_window_mib = mib_of(j["ovmf_classic_window_mib"]);
    l.ram_start_mib = mib_of(j["ram_start_mib"]);
    l.headroom_mib = mib_of(j["headroom_mib"]);
    l.phys_bits_since_qemu_server = j["phys_bits_since_qemu_server"].string();
    if (!listed_model(l.qemu64_models, l.default_model)) {
        j["default_model"].fail("must be one of qemu64_models");
    }
    if (util::version_numbers(l.phys_bits_since_qemu_server).empty()) {
        j["phys_bits_since_qemu_server"].fail("must be a version");
    }
    return l;
}

} // namespace

Result<AddressLimits> parse_address_limits(std::string_view text, const std::string& origin)
{
    return load<AddressLimits>(text, origin, k_address_schema, parse_limits);
}

Result<AddressLimits> load_address_limits(const DataDir& data)
{
    return data.load_profile("host/address-space.json", parse_address_limits);
}

} // namespace passthru::data
