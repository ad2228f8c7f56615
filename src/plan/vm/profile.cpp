// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/vm/profile.hpp"

#include <algorithm>
#include <limits>

#include "data/schema.hpp"
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

} // namespace

const std::vector<std::string>& vm_cpu_flag_allow_list()
{
    static const std::vector<std::string> k_flags{"nested-virt", "md-clear",   "pcid",    "spec-ctrl",   "ssbd",     "ibpb", "virt-ssbd",
                                                  "amd-ssbd",    "amd-no-ssb", "pdpe1gb", "hv-tlbflush", "hv-evmcs", "aes"};
    return k_flags;
}

namespace {

using data::Field;

constexpr std::string_view k_vm_schema = "passthru.vm-profile/1";

// A field that is absent or null keeps its default.
bool given(const Field& field)
{
    return field.present() && !field.json().is_null();
}

// A string of a profile: it lands in a line of the VM config or in a qm
// argument, so one with a line break (or another control character), which
// would add a line of its own, is refused.
std::string text(const Field& field)
{
    auto value = field.string();
    if (auto bad = format::invalid_value(format::Grammar::line_text, value, "")) {
        throw data::SchemaError(field.path() + " " + bad->substr(1), true,
                                "a profile's values go into the VM config: fix the profile and plan again");
    }
    return value;
}

void read_text(const Field& field, std::string& out)
{
    if (given(field)) {
        out = text(field);
    }
}

void read_bool(const Field& field, bool& out)
{
    if (given(field)) {
        out = field.boolean();
    }
}

void read_int(const Field& field, int& out)
{
    if (given(field)) {
        const auto n = field.integer();
        if (n < std::numeric_limits<int>::min() || n > std::numeric_limits<int>::max()) {
            field.expected("an integer");
        }
        out = static_cast<int>(n);
    }
}

void read_mib(const Field& field, std::uint64_t& out)
{
    if (given(field)) {
        const auto n = field.integer();
        if (n < 0) {
            field.fail("must be 0 or more");
        }
        out = static_cast<std::uint64_t>(n);
    }
}

// A sub-object (efidisk, cpu, memory, create): absent or null is all defaults.
bool section(const Field& field, std::initializer_list<std::string_view> fields, std::string_view of)
{
    if (!given(field)) {
        return false;
    }
    field.only_fields(fields, of);
    return true;
}

void read_cpu(const Field& c, VmProfile& p)
{
    if (!section(c, {"type", "flags", "hidden", "hv_vendor_id"}, "cpu (type, flags, hidden, hv_vendor_id)")) {
        return;
    }
    read_text(c["type"], p.cpu_type);
    if (const auto flags = c["flags"]; given(flags)) {
        for (std::size_t i = 0; i < flags.size(); ++i) {
            p.cpu_flags.push_back(text(flags[i]));
        }
    }
    read_bool(c["hidden"], p.cpu_hidden);
    if (given(c["hv_vendor_id"])) {
        p.hv_vendor_id = text(c["hv_vendor_id"]);
    }
}

void read_sections(const Field& doc, VmProfile& p)
{
    if (const auto e = doc["efidisk"]; section(e, {"efitype", "pre_enrolled_keys"}, "efidisk (efitype, pre_enrolled_keys)")) {
        read_text(e["efitype"], p.efitype);
        read_bool(e["pre_enrolled_keys"], p.pre_enrolled_keys);
    }
    read_cpu(doc["cpu"], p);
    if (const auto m = doc["memory"]; section(m, {"min_mib", "ram_per_vram", "base_mib"}, "memory (min_mib, ram_per_vram, base_mib)")) {
        read_mib(m["min_mib"], p.memory_min_mib);
        if (given(m["ram_per_vram"])) {
            p.ram_per_vram = m["ram_per_vram"].number();
        }
        read_mib(m["base_mib"], p.memory_base_mib);
    }
    const auto c = doc["create"];
    if (section(c, {"cores", "sockets", "memory_mib", "disk_gib", "scsihw", "disk_options", "net0", "tpmstate"}, "create")) {
        read_int(c["cores"], p.create_cores);
        read_int(c["sockets"], p.create_sockets);
        read_mib(c["memory_mib"], p.create_memory_mib);
        read_int(c["disk_gib"], p.create_disk_gib);
        read_text(c["scsihw"], p.create_scsihw);
        read_text(c["disk_options"], p.create_disk_options);
        read_text(c["net0"], p.create_net0);
        read_bool(c["tpmstate"], p.create_tpmstate);
    }
}

// The profile's fields over the defaults in VmProfile. "name" is documentation:
// the file's name names the profile.
void read_profile(const Field& doc, VmProfile& p)
{
    doc.only_fields({"schema", "comment", "name", "description", "ostype", "machine", "bios", "efidisk", "cpu", "numa", "affinity",
                     "balloon", "hugepages", "memory", "create"},
                    k_vm_schema);
    if (doc.has("name")) {
        doc["name"].string();
    }
    read_text(doc["description"], p.description);
    read_text(doc["ostype"], p.ostype);
    read_text(doc["machine"], p.machine);
    read_text(doc["bios"], p.bios);
    read_sections(doc, p);
    read_bool(doc["numa"], p.numa);
    read_bool(doc["affinity"], p.affinity);
    if (const auto balloon = doc["balloon"]; balloon.present()) {
        int mib = 0; // null: no balloon line
        read_int(balloon, mib);
        p.balloon = given(balloon) ? std::optional<int>(mib) : std::nullopt;
    }
    if (given(doc["hugepages"])) {
        p.hugepages = text(doc["hugepages"]);
    }
}

// The same rules PVE applies when it reads the config (docs/facts.md: vm-config),
// so a profile can never produce a line PVE drops.
void check_profile(const Field& doc, const VmProfile& p)
{
    if (!format::pve::valid_q35_machine(p.machine)) {
        doc["machine"].fail("'" + p.machine + "' is not a q35 type (pcie=1 needs q35)");
    }
    if (p.bios != "ovmf" && p.bios != "seabios") {
        doc["bios"].fail("must be ovmf or seabios, not '" + p.bios + "'");
    }
    if (p.efitype != "2m" && p.efitype != "4m") {
        doc["efidisk"]["efitype"].fail("must be 2m or 4m");
    }
    if (p.cpu_type.empty() || p.cpu_type.find_first_of(",;= ") != std::string::npos) {
        doc["cpu"]["type"].fail("'" + p.cpu_type + "' is not a CPU model (no ',', ';', '=' or space)");
    }
    const auto& allowed = vm_cpu_flag_allow_list();
    for (std::size_t i = 0; i < p.cpu_flags.size(); ++i) {
        const auto& flag = p.cpu_flags[i];
        if (!valid_cpu_flag(flag) || std::find(allowed.begin(), allowed.end(), flag.substr(1)) == allowed.end()) {
            doc["cpu"]["flags"][i].fail("'" + flag + "' is not one of +/-" + util::join(allowed, ", "));
        }
    }
    if (p.hv_vendor_id && !valid_hv_vendor_id(*p.hv_vendor_id)) {
        doc["cpu"]["hv_vendor_id"].fail("must be 1-12 letters or digits");
    }
    if (p.hugepages && *p.hugepages != "2" && *p.hugepages != "1024" && *p.hugepages != "any") {
        doc["hugepages"].fail("must be 2, 1024 or any");
    }
    if (p.hugepages && !p.numa) {
        doc["hugepages"].fail("need numa (PVE refuses to start otherwise)");
    }
    if (p.balloon && *p.balloon < 0) {
        doc["balloon"].fail("must be >= 0");
    }
    if (p.create_cores < 1 || p.create_sockets < 1 || p.create_memory_mib < 16 || p.create_disk_gib < 1) {
        doc["create"].fail("needs cores, sockets >= 1, memory_mib >= 16 and disk_gib >= 1");
    }
}

} // namespace

Result<VmProfile> parse_vm_profile(std::string_view name, std::string_view json_text, std::string_view origin)
{
    const std::string where = "VM profile '" + std::string(name) + "'" + (origin.empty() ? "" : " from " + std::string(origin));
    auto doc = util::parse_json(json_text, where, Errc::usage);
    if (!doc) {
        return tl::unexpected(doc.error());
    }
    if (doc->is_object() && !doc->contains("schema")) {
        (*doc)["schema"] = k_vm_schema; // written before profiles had a schema: read as its first version
    }
    return data::load_document<VmProfile>(*doc, where, k_vm_schema, [&](const Field& root) {
        VmProfile p;
        p.name = std::string(name);
        read_profile(root, p);
        check_profile(root, p);
        return p;
    });
}

Result<VmProfile> load_vm_profile(const data::DataDir& data, std::string_view name)
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
