// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/vm/profile.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "format/grammar.hpp"
#include "format/pve_config.hpp"
#include "util/json.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

namespace lex = util::lex;

// [a-z0-9][a-z0-9._-]*
bool valid_profile_name(std::string_view n)
{
    return !n.empty() && (lex::is_lower(n.front()) || lex::is_digit(n.front()))
           && lex::span(n, 1, [](char c) { return lex::is_lower(c) || lex::is_digit(c) || c == '.' || c == '_' || c == '-'; })
                  == n.size() - 1;
}

// [a-zA-Z0-9]{1,12}
bool valid_hv_vendor_id(std::string_view v)
{
    return v.size() <= 12 && lex::all_of(v, lex::is_alnum);
}

// [+-][a-zA-Z0-9._-]+
bool valid_cpu_flag(std::string_view f)
{
    return f.size() >= 2 && (f.front() == '+' || f.front() == '-')
           && lex::all_of(f.substr(1), [](char c) { return lex::is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

template<typename T>
T value_or(const nlohmann::json& j, const char* key, T fallback)
{
    if (j.contains(key) && !j.at(key).is_null()) {
        return j.at(key).get<T>();
    }
    return fallback;
}

} // namespace

const std::vector<std::string>& vm_cpu_flag_allow_list()
{
    static const std::vector<std::string> k_flags{"nested-virt", "md-clear",   "pcid",    "spec-ctrl",   "ssbd",     "ibpb", "virt-ssbd",
                                                  "amd-ssbd",    "amd-no-ssb", "pdpe1gb", "hv-tlbflush", "hv-evmcs", "aes"};
    return k_flags;
}

namespace {

// The profile's JSON over the defaults in VmProfile; throws nlohmann's
// exceptions on wrong types.
void read_profile_json(const nlohmann::json& j, VmProfile& p)
{
    p.description = value_or<std::string>(j, "description", "");
    p.ostype = value_or<std::string>(j, "ostype", p.ostype);
    p.machine = value_or<std::string>(j, "machine", p.machine);
    p.bios = value_or<std::string>(j, "bios", p.bios);
    if (j.contains("efidisk")) {
        const auto& e = j.at("efidisk");
        p.efitype = value_or<std::string>(e, "efitype", p.efitype);
        p.pre_enrolled_keys = value_or<bool>(e, "pre_enrolled_keys", p.pre_enrolled_keys);
    }
    if (j.contains("cpu")) {
        const auto& c = j.at("cpu");
        p.cpu_type = value_or<std::string>(c, "type", p.cpu_type);
        p.cpu_flags = value_or<std::vector<std::string>>(c, "flags", {});
        p.cpu_hidden = value_or<bool>(c, "hidden", false);
        if (c.contains("hv_vendor_id") && !c.at("hv_vendor_id").is_null()) {
            p.hv_vendor_id = c.at("hv_vendor_id").get<std::string>();
        }
    }
    p.numa = value_or<bool>(j, "numa", p.numa);
    p.affinity = value_or<bool>(j, "affinity", p.affinity);
    if (j.contains("balloon")) {
        p.balloon = j.at("balloon").is_null() ? std::nullopt : std::optional<int>(j.at("balloon").get<int>());
    }
    if (j.contains("hugepages") && !j.at("hugepages").is_null()) {
        p.hugepages = j.at("hugepages").get<std::string>();
    }
    if (j.contains("memory")) {
        const auto& m = j.at("memory");
        p.memory_min_mib = value_or<std::uint64_t>(m, "min_mib", p.memory_min_mib);
        p.ram_per_vram = value_or<double>(m, "ram_per_vram", p.ram_per_vram);
        p.memory_base_mib = value_or<std::uint64_t>(m, "base_mib", p.memory_base_mib);
    }
    if (j.contains("create")) {
        const auto& c = j.at("create");
        p.create_cores = value_or<int>(c, "cores", p.create_cores);
        p.create_sockets = value_or<int>(c, "sockets", p.create_sockets);
        p.create_memory_mib = value_or<std::uint64_t>(c, "memory_mib", p.create_memory_mib);
        p.create_disk_gib = value_or<int>(c, "disk_gib", p.create_disk_gib);
        p.create_scsihw = value_or<std::string>(c, "scsihw", p.create_scsihw);
        p.create_disk_options = value_or<std::string>(c, "disk_options", p.create_disk_options);
        p.create_net0 = value_or<std::string>(c, "net0", p.create_net0);
        p.create_tpmstate = value_or<bool>(c, "tpmstate", p.create_tpmstate);
    }
}

// Every string of a profile lands in a line of the VM config or in a qm
// argument: one with a line break (or another control character) would add a
// line of its own to the config, so it is refused before any rule below.
Result<void> check_profile_text(const VmProfile& p, const std::string& where)
{
    const std::pair<const char*, const std::string*> fields[] = {
        {"description", &p.description},
        {"ostype", &p.ostype},
        {"machine", &p.machine},
        {"bios", &p.bios},
        {"efidisk.efitype", &p.efitype},
        {"cpu.type", &p.cpu_type},
        {"create.scsihw", &p.create_scsihw},
        {"create.disk_options", &p.create_disk_options},
        {"create.net0", &p.create_net0},
        {"cpu.hv_vendor_id", p.hv_vendor_id ? &*p.hv_vendor_id : nullptr},
        {"hugepages", p.hugepages ? &*p.hugepages : nullptr},
    };
    std::optional<std::string> bad;
    for (const auto& [field, value] : fields) {
        if (value != nullptr && !bad) {
            bad = format::invalid_value(format::Grammar::line_text, *value, where + ": " + field);
        }
    }
    for (std::size_t i = 0; i < p.cpu_flags.size() && !bad; ++i) {
        bad = format::invalid_value(format::Grammar::line_text, p.cpu_flags[i], where + ": cpu.flags[" + std::to_string(i) + "]");
    }
    if (bad) {
        return tl::unexpected(Error(Errc::precondition, "refused: " + *bad)
                                  .with_hint("a profile's values go into the VM config: fix the profile and plan again"));
    }
    return {};
}

// The same rules PVE applies when it reads the config (docs/facts.md: vm-config),
// so a profile can never produce a line PVE drops.
Result<void> check_profile(const VmProfile& p, const std::string& where)
{
    if (!format::pve::valid_q35_machine(p.machine)) {
        return fail(Errc::parse, where + ": machine '" + p.machine + "' is not a q35 type (pcie=1 needs q35)");
    }
    if (p.bios != "ovmf" && p.bios != "seabios") {
        return fail(Errc::parse, where + ": bios must be ovmf or seabios, not '" + p.bios + "'");
    }
    if (p.efitype != "2m" && p.efitype != "4m") {
        return fail(Errc::parse, where + ": efidisk efitype must be 2m or 4m");
    }
    if (p.cpu_type.empty() || p.cpu_type.find_first_of(",;= ") != std::string::npos) {
        return fail(Errc::parse, where + ": bad cpu type '" + p.cpu_type + "'");
    }
    const auto& allowed = vm_cpu_flag_allow_list();
    for (const auto& flag : p.cpu_flags) {
        if (!valid_cpu_flag(flag) || std::find(allowed.begin(), allowed.end(), flag.substr(1)) == allowed.end()) {
            return fail(Errc::parse, where + ": cpu flag '" + flag + "' is not one of +/-" + util::join(allowed, ", "));
        }
    }
    if (p.hv_vendor_id && !valid_hv_vendor_id(*p.hv_vendor_id)) {
        return fail(Errc::parse, where + ": hv_vendor_id must be 1-12 letters or digits");
    }
    if (p.hugepages && *p.hugepages != "2" && *p.hugepages != "1024" && *p.hugepages != "any") {
        return fail(Errc::parse, where + ": hugepages must be 2, 1024 or any");
    }
    if (p.hugepages && !p.numa) {
        return fail(Errc::parse, where + ": hugepages need numa (PVE refuses to start otherwise)");
    }
    if (p.balloon && *p.balloon < 0) {
        return fail(Errc::parse, where + ": balloon must be >= 0");
    }
    if (p.create_cores < 1 || p.create_sockets < 1 || p.create_memory_mib < 16 || p.create_disk_gib < 1) {
        return fail(Errc::parse, where + ": create needs cores, sockets >= 1, memory_mib >= 16 and disk_gib >= 1");
    }
    return {};
}

} // namespace

Result<VmProfile> parse_vm_profile(std::string_view name, std::string_view json_text, std::string_view origin)
{
    const std::string where = "VM profile '" + std::string(name) + "'" + (origin.empty() ? "" : " from " + std::string(origin));
    VmProfile p;
    p.name = std::string(name);
    const auto parsed = util::parse_json(json_text, where, Errc::parse);
    if (!parsed) {
        return tl::unexpected(parsed.error());
    }
    try {
        const auto& j = *parsed;
        if (!j.is_object()) {
            return fail(Errc::parse, where + " is not a JSON object");
        }
        read_profile_json(j, p);
    } catch (const nlohmann::json::exception& e) {
        return fail(Errc::parse, where + ": " + e.what());
    }
    if (auto ok = check_profile_text(p, where); !ok) {
        return tl::unexpected(ok.error());
    }
    if (auto ok = check_profile(p, where); !ok) {
        return tl::unexpected(ok.error());
    }
    return p;
}

Result<VmProfile> load_vm_profile(const DataDir& data, std::string_view name)
{
    const std::string n(name);
    if (!valid_profile_name(n)) {
        return fail(Errc::usage, "--profile: '" + n + "' is not a profile name");
    }
    auto text = data.read("profiles", "vm/" + n + ".json");
    if (!text) {
        std::vector<std::string> names;
        for (const auto& f : data.list("profiles", "vm")) {
            if (f.ends_with(".json")) {
                names.push_back(f.substr(0, f.size() - 5));
            }
        }
        Error err(Errc::usage, "no VM profile '" + n + "'");
        if (!names.empty()) {
            err.with_hint("VM profiles: " + util::join(names, ", "));
        }
        return tl::unexpected<Error>(std::move(err));
    }
    return parse_vm_profile(name, *text, data.origin("profiles", "vm/" + n + ".json").value_or(""));
}

} // namespace passthru::plan
