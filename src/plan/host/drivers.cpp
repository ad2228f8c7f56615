// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/host/drivers.hpp"

#include "data/schema.hpp"
#include "plan/host/common.hpp"
#include "util/strings.hpp"

namespace passthru::plan::detail {

namespace {

constexpr std::string_view k_drivers_file = "host/drivers.json";
constexpr std::string_view k_drivers_schema = "passthru.host-drivers/1";

std::optional<std::uint16_t> hex16(const data::Field& f, std::size_t digits)
{
    if (!f.json().is_string()) {
        f.fail("must be a string of " + std::to_string(digits) + " hex digits");
    }
    const auto text = f.string();
    if (text.size() != digits || text.find_first_not_of("0123456789abcdef") != std::string::npos) {
        f.fail("must be " + std::to_string(digits) + " lower-case hex digits, not '" + text + "'");
    }
    return static_cast<std::uint16_t>(std::stoul(text, nullptr, 16));
}

bool valid_module(const std::string& name)
{
    return !name.empty() && name.size() <= 56 && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
}

void parse_claims(const data::Field& c, HostDriver& d)
{
    if (!c.json().is_object() || c.json().empty()) {
        c.fail("must be an object with vendor, kind and/or class");
    }
    c.only_fields({"vendor", "kind", "class"}, "claims (vendor, kind, class)");
    if (c.has("vendor")) {
        d.vendor = hex16(c["vendor"], 4);
    }
    if (c.has("class")) {
        d.class16 = hex16(c["class"], 4);
    }
    if (c.has("kind")) {
        if (c["kind"].json() != "display") {
            c["kind"].fail("must be \"display\"");
        }
        d.kind = FunctionKind::display;
    }
    d.claims_something = true;
}

HostDriver parse_driver(const data::Field& j)
{
    if (!j.json().is_object()) {
        j.fail("must be an object");
    }
    j.only_fields({"module", "vendor", "claims", "why", "blacklist", "framebuffer", "since_kernel", "vgpu_keep"}, "a driver");
    HostDriver d;
    if (!j["module"].json().is_string() || !valid_module(j["module"].string())) {
        j["module"].fail("must be a kernel module name (lower-case letters, digits, '_' or '-')");
    }
    d.module = module_key(j["module"].string());
    if (!j["why"].json().is_string() || j["why"].string().empty()) {
        j["why"].fail("must say why the driver matters");
    }
    d.why = j["why"].string();
    for (const char* flag : {"blacklist", "framebuffer", "vgpu_keep"}) {
        if (j.has(flag) && !j[flag].json().is_boolean()) {
            j[flag].fail("must be true or false");
        }
    }
    d.blacklist = j.has("blacklist") && j["blacklist"].boolean();
    d.framebuffer = j.has("framebuffer") && j["framebuffer"].boolean();
    d.vgpu_keep = j.has("vgpu_keep") && j["vgpu_keep"].boolean();
    if (j.has("since_kernel")) {
        const auto v = j["since_kernel"];
        const auto version = v.json().is_string() ? util::major_minor(v.string()) : std::nullopt;
        if (!version) {
            v.fail("must be a kernel version such as \"6.15\"");
        }
        d.since_kernel = version;
    }
    if (j.has("claims")) {
        parse_claims(j["claims"], d);
    }
    d.owner = j.has("vendor") ? hex16(j["vendor"], 4) : d.vendor;
    if (d.blacklist && !d.owner) {
        j["blacklist"].fail("needs the GPU vendor the driver belongs to (\"vendor\" or claims.vendor)");
    }
    return d;
}

HostDriverData parse_drivers_document(const data::Field& doc)
{
    doc.only_fields({"schema", "comment", "drivers", "driver_modules"}, k_drivers_schema);
    HostDriverData out;
    const auto drivers = doc["drivers"];
    if (!drivers.json().is_array()) {
        drivers.fail("must be a list");
    }
    for (std::size_t i = 0; i < drivers.size(); ++i) {
        out.drivers.push_back(parse_driver(drivers[i]));
    }
    if (doc.has("driver_modules")) {
        const auto modules = doc["driver_modules"];
        if (!modules.json().is_object()) {
            modules.fail("must be an object");
        }
        for (const auto& item : modules.json().items()) {
            if (item.key() == "comment") {
                continue;
            }
            const auto module = modules[item.key()];
            if (!module.json().is_string() || !valid_module(module.string())) {
                module.fail("must be a kernel module name");
            }
            out.driver_modules[item.key()] = module_key(module.string());
        }
    }
    return out;
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
    return data.load_profile(k_drivers_file, [](std::string_view text, const std::string& where) {
        return passthru::data::load<HostDriverData>(text, where, k_drivers_schema, parse_drivers_document);
    });
}

} // namespace passthru::plan::detail
