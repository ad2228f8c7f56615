// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/vm/profile.hpp"

#include <algorithm>

#include "format/pve_config.hpp"
#include "util/lex.hpp"
#include "util/strings.hpp"

namespace passthru::plan {

namespace {

namespace lex = util::lex;

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
    return data::parse_vm_profile(name, json_text, origin, check_profile);
}

Result<VmProfile> load_vm_profile(const data::DataDir& data, std::string_view name)
{
    return data::load_vm_profile(data, name, check_profile);
}

} // namespace passthru::plan
