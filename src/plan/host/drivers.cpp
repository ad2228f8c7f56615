// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/host/drivers.hpp"

#include "plan/host/common.hpp"
#include "util/json.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

constexpr std::string_view k_drivers_file = "host/drivers.json";
constexpr std::string_view k_drivers_schema = "passthru.host-drivers/1";

struct DriverSchemaError
{
    std::string field;
    std::string what;
};

std::optional<std::uint16_t> hex16(const nlohmann::json& j, const std::string& field, std::size_t digits)
{
    if (!j.is_string()) {
        throw DriverSchemaError{field, "must be a string of " + std::to_string(digits) + " hex digits"};
    }
    const auto text = j.get<std::string>();
    if (text.size() != digits || text.find_first_not_of("0123456789abcdef") != std::string::npos) {
        throw DriverSchemaError{field, "must be " + std::to_string(digits) + " lower-case hex digits, not '" + text + "'"};
    }
    return static_cast<std::uint16_t>(std::stoul(text, nullptr, 16));
}

bool valid_module(const std::string& name)
{
    return !name.empty() && name.size() <= 56 && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
}

HostDriver parse_driver(const nlohmann::json& j, const std::string& at)
{
    if (!j.is_object()) {
        throw DriverSchemaError{at, "must be an object"};
    }
    for (const auto& [key, value] : j.items()) {
        if (key != "module" && key != "claims" && key != "why" && key != "blacklist" && key != "framebuffer" && key != "since_kernel"
            && key != "vgpu_keep") {
            throw DriverSchemaError{at + "." + key, "is not a field of a driver"};
        }
    }
    HostDriver d;
    if (!j.contains("module") || !j["module"].is_string() || !valid_module(j["module"].get<std::string>())) {
        throw DriverSchemaError{at + ".module", "must be a kernel module name (lower-case letters, digits, '_' or '-')"};
    }
    d.module = module_key(j["module"].get<std::string>());
    if (!j.contains("why") || !j["why"].is_string() || j["why"].get<std::string>().empty()) {
        throw DriverSchemaError{at + ".why", "must say why the driver matters"};
    }
    d.why = j["why"].get<std::string>();
    for (const char* flag : {"blacklist", "framebuffer", "vgpu_keep"}) {
        if (j.contains(flag) && !j[flag].is_boolean()) {
            throw DriverSchemaError{at + "." + flag, "must be true or false"};
        }
    }
    d.blacklist = j.value("blacklist", false);
    d.framebuffer = j.value("framebuffer", false);
    d.vgpu_keep = j.value("vgpu_keep", false);
    if (j.contains("since_kernel")) {
        const auto version = j["since_kernel"].is_string() ? util::major_minor(j["since_kernel"].get<std::string>()) : std::nullopt;
        if (!version) {
            throw DriverSchemaError{at + ".since_kernel", "must be a kernel version such as \"6.15\""};
        }
        d.since_kernel = version;
    }
    if (j.contains("claims")) {
        const auto& c = j["claims"];
        const std::string cat = at + ".claims";
        if (!c.is_object() || c.empty()) {
            throw DriverSchemaError{cat, "must be an object with vendor, kind and/or class"};
        }
        for (const auto& [key, value] : c.items()) {
            if (key == "vendor") {
                d.vendor = hex16(value, cat + ".vendor", 4);
            } else if (key == "class") {
                d.class16 = hex16(value, cat + ".class", 4);
            } else if (key == "kind") {
                if (value != "display") {
                    throw DriverSchemaError{cat + ".kind", "must be \"display\""};
                }
                d.kind = FunctionKind::display;
            } else {
                throw DriverSchemaError{cat + "." + key, "is not a field of claims (vendor, kind, class)"};
            }
        }
        d.claims_something = true;
    }
    return d;
}

std::string version_text(const std::pair<int, int>& v)
{
    return std::to_string(v.first) + "." + std::to_string(v.second);
}

} // namespace

HostDriverData drivers_for_kernel(const util::HostFs& fs, const std::optional<std::string>& kernel_release,
                                  const std::optional<std::pair<int, int>>& kernel_version, HostDriverData data,
                                  std::vector<std::string>& why)
{
    const std::string kver = kernel_release.value_or("?");
    std::vector<HostDriver> kept;
    for (auto& d : data.drivers) {
        if (!d.since_kernel) {
            kept.push_back(std::move(d));
            continue;
        }
        bool present = false;
        if (const auto has = target_has_module(fs, kernel_release.value_or(""), d.module)) {
            present = *has;
            why.push_back((present ? "includes " : "leaves out ") + d.module + ": the module tree of kernel " + kver
                          + (present ? " has it" : " does not have it") + " (asked through libkmod)");
        } else if (kernel_version) {
            present = *kernel_version >= *d.since_kernel;
            why.push_back((present ? "includes " : "leaves out ") + d.module + ": no module tree of kernel " + kver
                          + " to ask, and the module exists from Linux " + version_text(*d.since_kernel) + " on");
        } else {
            present = true;
            why.push_back("includes " + d.module + ": the target kernel is unknown, and the lines are harmless where the module is absent");
        }
        if (present) {
            kept.push_back(std::move(d));
        }
    }
    data.drivers = std::move(kept);
    return data;
}

bool HostDriver::claims(const scan::PciDevice& device) const
{
    if (!claims_something) {
        return false;
    }
    if (vendor && device.vendor != vendor) {
        return false;
    }
    if (kind == FunctionKind::display && !device.is_display()) {
        return false;
    }
    return !class16 || device.class16() == class16;
}

std::string HostDriver::reason(const std::string& function) const
{
    std::string out = why;
    if (const auto at = out.find("{function}"); at != std::string::npos) {
        out.replace(at, 10, function);
    }
    return out;
}

Result<HostDriverData> load_host_drivers(const DataDir& data)
{
    auto text = data.read("profiles", k_drivers_file);
    if (!text) {
        return tl::unexpected(text.error());
    }
    const std::string where = data.origin("profiles", k_drivers_file).value_or("profiles/" + std::string(k_drivers_file));
    const auto parsed = util::parse_json(*text, where, Errc::usage);
    if (!parsed) {
        return tl::unexpected(parsed.error());
    }
    const auto& doc = *parsed;
    try {
        if (!doc.is_object() || doc.value("schema", "") != k_drivers_schema) {
            throw DriverSchemaError{"schema", "must be \"" + std::string(k_drivers_schema) + "\""};
        }
        HostDriverData out;
        if (!doc.contains("drivers") || !doc["drivers"].is_array()) {
            throw DriverSchemaError{"drivers", "must be a list"};
        }
        for (std::size_t i = 0; i < doc["drivers"].size(); ++i) {
            out.drivers.push_back(parse_driver(doc["drivers"][i], "drivers[" + std::to_string(i) + "]"));
        }
        if (doc.contains("driver_modules")) {
            if (!doc["driver_modules"].is_object()) {
                throw DriverSchemaError{"driver_modules", "must be an object"};
            }
            for (const auto& [driver, module] : doc["driver_modules"].items()) {
                if (driver == "comment") {
                    continue;
                }
                if (!module.is_string() || !valid_module(module.get<std::string>())) {
                    throw DriverSchemaError{"driver_modules." + driver, "must be a kernel module name"};
                }
                out.driver_modules[driver] = module_key(module.get<std::string>());
            }
        }
        return out;
    } catch (const DriverSchemaError& e) {
        return fail(Errc::usage, where + ": " + e.field + " " + e.what);
    }
}

} // namespace passthru::plan::detail
