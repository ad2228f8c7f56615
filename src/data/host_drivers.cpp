// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/host_drivers.hpp"

#include "data/schema.hpp"
#include "util/strings.hpp"

namespace passthru::data {

namespace {

constexpr std::string_view k_drivers_schema = "passthru.host-drivers/1";

std::optional<std::uint16_t> hex16(const Field& f, std::size_t digits)
{
    if (!f.is_string()) {
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

void parse_claims(const Field& c, HostDriver& d)
{
    if (!c.is_object() || c.keys().empty()) {
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
        if (c["kind"].if_string() != "display") {
            c["kind"].fail("must be \"display\"");
        }
        d.kind = FunctionKind::display;
    }
    d.claims_something = true;
}

HostDriver parse_driver(const Field& j)
{
    if (!j.is_object()) {
        j.fail("must be an object");
    }
    j.only_fields({"module", "vendor", "claims", "why", "blacklist", "framebuffer", "since_kernel", "vgpu_keep"}, "a driver");
    HostDriver d;
    if (!j["module"].is_string() || !valid_module(j["module"].string())) {
        j["module"].fail("must be a kernel module name (lower-case letters, digits, '_' or '-')");
    }
    d.module = util::module_key(j["module"].string());
    if (j["why"].if_string().value_or("").empty()) {
        j["why"].fail("must say why the driver matters");
    }
    d.why = j["why"].string();
    for (const char* flag : {"blacklist", "framebuffer", "vgpu_keep"}) {
        if (j.has(flag) && !j[flag].is_boolean()) {
            j[flag].fail("must be true or false");
        }
    }
    d.blacklist = j.has("blacklist") && j["blacklist"].boolean();
    d.framebuffer = j.has("framebuffer") && j["framebuffer"].boolean();
    d.vgpu_keep = j.has("vgpu_keep") && j["vgpu_keep"].boolean();
    if (j.has("since_kernel")) {
        const auto v = j["since_kernel"];
        const auto text = v.if_string();
        const auto version = text ? util::major_minor(*text) : std::nullopt;
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

HostDriverData parse_drivers_document(const Field& doc)
{
    doc.only_fields({"schema", "comment", "drivers", "driver_modules"}, k_drivers_schema);
    HostDriverData out;
    const auto drivers = doc["drivers"];
    if (!drivers.is_array()) {
        drivers.fail("must be a list");
    }
    for (const auto& driver : drivers.elements()) {
        out.drivers.push_back(parse_driver(driver));
    }
    if (doc.has("driver_modules")) {
        const auto modules = doc["driver_modules"];
        if (!modules.is_object()) {
            modules.fail("must be an object");
        }
        for (const auto& key : modules.keys()) {
            if (key == "comment") {
                continue;
            }
            const auto module = modules[key];
            if (!module.is_string() || !valid_module(module.string())) {
                module.fail("must be a kernel module name");
            }
            out.driver_modules[key] = util::module_key(module.string());
        }
    }
    return out;
}

} // namespace

Result<HostDriverData> parse_host_drivers(std::string_view text, const std::string& where)
{
    return load<HostDriverData>(text, where, k_drivers_schema, parse_drivers_document);
}

Result<HostDriverData> load_host_drivers(const DataDir& data)
{
    return data.load_profile("host/drivers.json", parse_host_drivers);
}

std::string HostDriver::reason(const std::string& function) const
{
    std::string out = why;
    if (const auto at = out.find("{function}"); at != std::string::npos) {
        out.replace(at, 10, function);
    }
    return out;
}

} // namespace passthru::data
