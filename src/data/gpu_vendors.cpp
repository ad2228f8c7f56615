// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/gpu_vendors.hpp"

#include <set>

#include "data/schema.hpp"
#include "util/strings.hpp"

namespace passthru::data {

namespace {

constexpr std::string_view k_vendors_schema = "passthru.gpu-vendors/1";

// Exactly four lower-case hex digits ("10de", "0680").
std::uint16_t vendor_hex(const Field& f)
{
    const std::string text = f.if_string().value_or("");
    if (text.size() != 4 || text.find_first_not_of("0123456789abcdef") != std::string::npos) {
        f.fail("must be 4 lower-case hex digits");
    }
    return static_cast<std::uint16_t>(std::stoul(text, nullptr, 16));
}

bool vendor_flag(const Field& row, std::string_view key)
{
    return row.has(key) && row[key].boolean();
}

GpuVendor parse_vendor_row(const Field& row)
{
    row.only_fields({"id", "name", "gpus_all", "drivers", "switch_class", "vgpu", "hidden_audio"}, "a GPU vendor");
    GpuVendor v;
    v.id = vendor_hex(row["id"]);
    v.name = row["name"].one_line();
    v.gpus_all = vendor_flag(row, "gpus_all");
    v.drivers = row["drivers"].one_line();
    if (row.has("switch_class")) {
        v.switch_class = vendor_hex(row["switch_class"]);
        if (protected_class(*v.switch_class)) {
            row["switch_class"].fail("names the class of a storage, network, display, bridge, system or USB controller, "
                                     "which is never a fabric switch");
        }
    }
    v.vgpu = vendor_flag(row, "vgpu");
    v.hidden_audio = vendor_flag(row, "hidden_audio");
    return v;
}

GpuVendors parse_vendors_document(const Field& doc)
{
    doc.only_fields({"schema", "comment", "vendors"}, k_vendors_schema);
    const auto rows = doc["vendors"];
    GpuVendors out;
    if (rows.size() == 0) {
        rows.fail("lists no vendor");
    }
    std::set<std::uint16_t> seen;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        auto row = parse_vendor_row(rows[i]);
        if (!seen.insert(row.id).second) {
            rows[i]["id"].fail("names a vendor listed before");
        }
        out.rows.push_back(std::make_shared<const GpuVendor>(std::move(row)));
    }
    return out;
}

} // namespace

std::shared_ptr<const GpuVendor> GpuVendors::find(std::optional<std::uint16_t> id) const
{
    for (const auto& row : rows) {
        if (id == row->id) {
            return row;
        }
    }
    return nullptr;
}

bool protected_class(std::uint16_t class16)
{
    const auto base = static_cast<std::uint8_t>(class16 >> 8);
    return base == 0x01 || base == 0x02 || base == 0x03 || base == 0x08 || (class16 >= 0x0600 && class16 <= 0x0604) || class16 == 0x0c03
           || class16 == 0x0c05;
}

bool GpuVendors::is_switch(std::optional<std::uint16_t> vendor, std::optional<std::uint16_t> class16) const
{
    // Decided by the device first: a protected class is no switch, whatever the rows say.
    if (!class16 || protected_class(*class16)) {
        return false;
    }
    const auto row = find(vendor);
    return row != nullptr && row->switch_class && class16 == row->switch_class;
}

std::string GpuVendors::gpus_all_names() const
{
    std::vector<std::string> names;
    for (const auto& row : rows) {
        if (row->gpus_all) {
            names.push_back(row->name);
        }
    }
    return util::join(names, " or ");
}

Result<GpuVendors> parse_gpu_vendors(std::string_view json_text, const std::string& where)
{
    return load<GpuVendors>(json_text, where, k_vendors_schema, parse_vendors_document);
}

Result<GpuVendors> load_gpu_vendors(const DataDir& data)
{
    return data.load_profile("host/vendors.json", parse_gpu_vendors);
}

} // namespace passthru::data
