// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/vm_profile.hpp"

#include <initializer_list>
#include <limits>

#include "util/json.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"
#include "util/term.hpp"

namespace passthru::data {

namespace {

namespace lex = util::lex;

// [a-z0-9][a-z0-9._-]*
bool valid_profile_name(std::string_view n)
{
    return !n.empty() && (lex::is_lower(n.front()) || lex::is_digit(n.front()))
           && lex::span(n, 1, [](char c) { return lex::is_lower(c) || lex::is_digit(c) || c == '.' || c == '_' || c == '-'; })
                  == n.size() - 1;
}

constexpr std::string_view k_vm_schema = "passthru.vm-profile/1";

// A field that is absent or null keeps its default.
bool given(const Field& field)
{
    return field.present() && !field.is_null();
}

// A string of a profile: it lands in a line of the VM config or in a qm
// argument, so one with a line break (or another control character), which
// would add a line of its own, is refused (format/grammar.hpp's line_text).
std::string text(const Field& field)
{
    auto value = field.string();
    if (!util::one_line(value)) {
        throw SchemaError(field.path() + " '" + util::shown_value(value)
                              + "' is not one line of text: no line break or other control character",
                          true, "a profile's values go into the VM config: fix the profile and plan again");
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

} // namespace

Result<VmProfile> parse_vm_profile(std::string_view name, std::string_view json_text, std::string_view origin, const VmProfileCheck& check)
{
    const std::string where = "VM profile '" + std::string(name) + "'" + (origin.empty() ? "" : " from " + std::string(origin));
    auto doc = util::parse_json(json_text, where, Errc::usage);
    if (!doc) {
        return tl::unexpected(doc.error());
    }
    if (doc->is_object() && !doc->contains("schema")) {
        (*doc)["schema"] = k_vm_schema; // written before profiles had a schema: read as its first version
    }
    return load_document<VmProfile>(*doc, where, k_vm_schema, [&](const Field& root) {
        VmProfile p;
        p.name = std::string(name);
        read_profile(root, p);
        if (check) {
            check(root, p);
        }
        return p;
    });
}

Result<VmProfile> load_vm_profile(const DataDir& data, std::string_view name, const VmProfileCheck& check)
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
    return parse_vm_profile(name, *text, data.origin("profiles", "vm/" + n + ".json").value_or(""), check);
}

} // namespace passthru::data
