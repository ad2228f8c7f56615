// SPDX-License-Identifier: GPL-2.0-or-later
#include "plan/plan_json.hpp"

#include <cstdio>
#include <string_view>

#include "plan/request.hpp"
#include "util/base64.hpp"
#include "util/sha256.hpp"

namespace passthru::plan {

namespace {

using nlohmann::json;

json opt_string(const std::optional<std::string>& v)
{
    return v ? json(*v) : json(nullptr);
}

std::string mode_string(mode_t mode)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
    return buf;
}

// Reading helpers: throw ParseError with the field path; converted at the top.
struct ParseError
{
    std::string message;
};

// The context is a string_view: GCC 14's -Wdangling-reference takes a reference
// returned from a call with a std::string temporary argument ("plan") for one
// into that temporary; a string_view argument is not taken for an owner.
const json& field(const json& obj, const char* key, std::string_view where)
{
    if (!obj.is_object() || !obj.contains(key)) {
        throw ParseError{std::string{where} + "." + key + " is missing"};
    }
    return obj.at(key);
}

std::string get_string(const json& obj, const char* key, const std::string& where)
{
    const auto& v = field(obj, key, where);
    if (!v.is_string()) {
        throw ParseError{where + "." + key + " must be a string"};
    }
    return v.get<std::string>();
}

std::optional<std::string> get_opt_string(const json& obj, const char* key, const std::string& where)
{
    if (!obj.contains(key) || obj.at(key).is_null()) {
        return std::nullopt;
    }
    return get_string(obj, key, where);
}

std::vector<std::string> get_strings(const json& obj, const char* key, const std::string& where, bool required = true)
{
    if (!obj.contains(key) && !required) {
        return {};
    }
    const auto& v = field(obj, key, where);
    if (!v.is_array()) {
        throw ParseError{where + "." + key + " must be an array"};
    }
    std::vector<std::string> out;
    for (const auto& item : v) {
        if (!item.is_string()) {
            throw ParseError{where + "." + key + " must hold strings"};
        }
        out.push_back(item.get<std::string>());
    }
    return out;
}

bool get_bool(const json& obj, const char* key, const std::string& where, bool fallback)
{
    if (!obj.contains(key)) {
        return fallback;
    }
    const auto& v = obj.at(key);
    if (!v.is_boolean()) {
        throw ParseError{where + "." + key + " must be true or false"};
    }
    return v.get<bool>();
}

const json& get_array(const json& obj, const char* key, std::string_view where)
{
    const auto& v = field(obj, key, where);
    if (!v.is_array()) {
        throw ParseError{std::string{where} + "." + key + " must be an array"};
    }
    return v;
}

// request.kernel: passthru kernel pin / unpin / trial.
KernelRequest parse_kernel_request(const json& k)
{
    if (!k.is_object()) {
        throw ParseError{"request.kernel must be an object"};
    }
    const std::string action = get_string(k, "action", "request.kernel");
    KernelRequest kr;
    if (action == to_string(KernelAction::pin)) {
        kr.action = KernelAction::pin;
    } else if (action == to_string(KernelAction::unpin)) {
        kr.action = KernelAction::unpin;
    } else if (action == to_string(KernelAction::trial)) {
        kr.action = KernelAction::trial;
    } else {
        throw ParseError{"request.kernel.action must be pin, unpin or trial"};
    }
    kr.release = get_string(k, "release", "request.kernel");
    return kr;
}

// request.romfiles (--romfile): absent or null in requests without it.
std::vector<RomFile> romfiles_from(const json& r)
{
    std::vector<RomFile> out;
    if (!r.contains("romfiles") || r["romfiles"].is_null()) {
        return out;
    }
    if (!r["romfiles"].is_array()) {
        throw ParseError{"request.romfiles must be an array"};
    }
    for (const auto& rf : r["romfiles"]) {
        if (!rf.is_object()) {
            throw ParseError{"request.romfiles must hold objects"};
        }
        out.push_back({get_string(rf, "slot", "request.romfiles"), get_string(rf, "file", "request.romfiles")});
    }
    return out;
}

// request.containers (--ct): absent or null in requests without it.
std::vector<ContainerRequest> containers_from(const json& r)
{
    std::vector<ContainerRequest> out;
    if (!r.contains("containers") || r["containers"].is_null()) {
        return out;
    }
    for (const auto& c : get_array(r, "containers", "request")) {
        if (!c.is_object()) {
            throw ParseError{"request.containers must hold objects"};
        }
        out.push_back({get_string(c, "ct", "request.containers"), get_string(c, "gpus", "request.containers")});
    }
    return out;
}

// Checks the request (plan/request.hpp) after reading it, unless check is shape_only.
Request parse_request(const json& r, RequestCheck check = RequestCheck::validate)
{
    const std::string w = "request";
    if (!r.is_object()) {
        throw ParseError{"request must be an object"};
    }
    Request req;
    req.vm = get_string(r, "vm", w);
    if (r.contains("vmid") && !r["vmid"].is_null()) {
        if (!r["vmid"].is_number_unsigned()) {
            throw ParseError{"request.vmid must be a non-negative integer"};
        }
        req.vmid = r["vmid"].get<std::uint64_t>();
    }
    req.gpus = get_string(r, "gpus", w);
    req.acs_override = get_bool(r, "acs_override", w, false) ? AcsOverride::yes : AcsOverride::no;
    req.no_fabric = get_bool(r, "no_fabric", w, false) ? NoFabric::yes : NoFabric::no;
    const auto backend = backend_from(r.value("backend", std::string(to_string(Backend::proxmox))));
    if (!backend) {
        throw ParseError{"request.backend must be proxmox or libvirt"};
    }
    req.backend = *backend;
    req.mapping = get_opt_string(r, "mapping", w);
    if (r.contains("node_scans") && !r["node_scans"].is_null()) {
        if (!r["node_scans"].is_array()) {
            throw ParseError{"request.node_scans must be an array"};
        }
        for (const auto& ns : r["node_scans"]) {
            if (!ns.is_object()) {
                throw ParseError{"request.node_scans must hold objects"};
            }
            req.node_scans.push_back({get_string(ns, "node", "request.node_scans"), get_string(ns, "file", "request.node_scans")});
        }
    }
    req.containers = containers_from(r);
    req.romfiles = romfiles_from(r);
    req.connect_uri = get_opt_string(r, "connect_uri", w);
    req.vm_profile = get_opt_string(r, "vm_profile", w);
    if (r.contains("network") && !r["network"].is_null()) {
        const auto& n = r["network"];
        const std::string nw = "request.network";
        NetworkRequest net;
        net.bond_slaves = get_strings(n, "bond_slaves", nw);
        net.bond_mode = get_string(n, "bond_mode", nw);
        net.bond_name = get_string(n, "bond_name", nw);
        net.bridge = get_string(n, "bridge", nw);
        net.address = get_opt_string(n, "address", nw);
        net.gateway = get_opt_string(n, "gateway", nw);
        net.xmit_hash_policy = get_opt_string(n, "xmit_hash_policy", nw);
        net.vlan_aware = get_bool(n, "vlan_aware", nw, false);
        net.pin_nics = get_bool(n, "pin_nics", nw, false);
        const std::string apply = n.value("apply", "staged");
        if (apply != "staged" && apply != "now") {
            throw ParseError{"request.network.apply must be staged or now"};
        }
        net.apply = apply == "now" ? ApplyNetwork::now : ApplyNetwork::staged;
        if (n.contains("confirm_timeout_seconds") && !n["confirm_timeout_seconds"].is_null()) {
            if (!n["confirm_timeout_seconds"].is_number_integer()) {
                throw ParseError{"request.network.confirm_timeout_seconds must be an integer"};
            }
            net.confirm_timeout_seconds = n["confirm_timeout_seconds"].get<int>();
        }
        req.network = std::move(net);
    }
    if (r.contains("trial_minutes") && !r["trial_minutes"].is_null()) {
        if (!r["trial_minutes"].is_number_integer()) {
            throw ParseError{"request.trial_minutes must be an integer"};
        }
        req.trial_minutes = r["trial_minutes"].get<int>();
    }
    if (r.contains("kernel") && !r["kernel"].is_null()) {
        req.kernel = parse_kernel_request(r["kernel"]);
    }
    if (auto valid = check == RequestCheck::validate ? validate_request(req) : Result<void>{}; !valid) {
        throw ParseError{"request: " + std::string(valid.error().what())};
    }
    return req;
}

} // namespace

std::string_view to_string(FileAction action)
{
    switch (action) {
    case FileAction::create:
        return "create";
    case FileAction::modify:
        return "modify";
    case FileAction::remove:
        return "delete";
    }
    return "modify";
}

std::string_view to_string(KernelAction action)
{
    switch (action) {
    case KernelAction::pin:
        return "pin";
    case KernelAction::unpin:
        return "unpin";
    case KernelAction::trial:
        return "trial";
    }
    return "pin";
}

std::optional<FileAction> file_action_from(std::string_view word)
{
    for (const auto action : {FileAction::create, FileAction::modify, FileAction::remove}) {
        if (to_string(action) == word) {
            return action;
        }
    }
    return std::nullopt;
}

json request_to_json(const Request& request)
{
    json r{
        {"vm", request.vm},
        {"vmid", request.vmid ? json(*request.vmid) : json(nullptr)},
        {"gpus", request.gpus},
        {"acs_override", request.acs_override == AcsOverride::yes},
        {"no_fabric", request.no_fabric == NoFabric::yes},
        {"backend", to_string(request.backend)},
        {"mapping", opt_string(request.mapping)},
        {"connect_uri", opt_string(request.connect_uri)},
        {"vm_profile", opt_string(request.vm_profile)},
        {"network", nullptr},
    };
    if (!request.node_scans.empty()) {
        json nodes = json::array();
        for (const auto& ns : request.node_scans) {
            nodes.push_back({{"node", ns.node}, {"file", ns.file}});
        }
        r["node_scans"] = std::move(nodes);
    }
    if (!request.containers.empty()) {
        json cts = json::array();
        for (const auto& c : request.containers) {
            cts.push_back({{"ct", c.ct}, {"gpus", c.gpus}});
        }
        r["containers"] = std::move(cts); // only plans for containers carry it: other documents stay as they were
    }
    if (!request.romfiles.empty()) { // only requests with --romfile carry it: other documents stay as they were
        json roms = json::array();
        for (const auto& rf : request.romfiles) {
            roms.push_back({{"slot", rf.slot}, {"file", rf.file}});
        }
        r["romfiles"] = std::move(roms);
    }
    if (request.network) {
        const auto& n = *request.network;
        r["network"] = {
            {"bond_slaves", n.bond_slaves},
            {"bond_mode", n.bond_mode},
            {"bond_name", n.bond_name},
            {"bridge", n.bridge},
            {"address", opt_string(n.address)},
            {"gateway", opt_string(n.gateway)},
            {"xmit_hash_policy", opt_string(n.xmit_hash_policy)},
            {"vlan_aware", n.vlan_aware},
            {"pin_nics", n.pin_nics},
            {"apply", n.apply == ApplyNetwork::now ? "now" : "staged"},
            {"confirm_timeout_seconds", n.confirm_timeout_seconds ? json(*n.confirm_timeout_seconds) : json(nullptr)},
        };
    }
    if (request.trial_minutes) {
        r["trial_minutes"] = *request.trial_minutes; // only trials carry it: other documents stay as they were
    }
    if (request.kernel) {
        r["kernel"] = {{"action", to_string(request.kernel->action)}, {"release", request.kernel->release}}; // only kernel pin/unpin/trial
    }
    return r;
}

Result<Request> request_from_json(const nlohmann::json& doc, RequestCheck check)
{
    try {
        return parse_request(doc, check);
    } catch (const ParseError& e) {
        return fail(Errc::parse, "not a valid passthru request: " + e.message);
    }
}

json plan_to_json(const Plan& plan)
{
    json files = json::array();
    for (const auto& f : plan.files) {
        // A binary file's bytes go as base64; the checksums are of the bytes.
        const auto carried = [&f](const std::optional<std::string>& v) {
            return v && f.binary ? json(util::base64_encode(*v)) : opt_string(v);
        };
        json entry = {
            {"path", f.path},
            {"action", std::string(to_string(f.action))},
            {"content", carried(f.after)},
            {"before", carried(f.before)},
            {"before_sha256", opt_string(f.before_sha256)},
            {"after_sha256", f.after ? json(util::sha256_hex(*f.after)) : json(nullptr)},
            {"mode", mode_string(f.mode)},
            {"reasons", f.reasons},
        };
        if (f.binary) {
            entry["encoding"] = "base64"; // text files carry no encoding member: their documents stay as they were
        }
        files.push_back(std::move(entry));
    }
    json commands = json::array();
    for (const auto& c : plan.commands) {
        commands.push_back({{"argv", c.argv}, {"reason", c.reason}});
    }
    const auto cards_json = [](const std::vector<SelectedGpu>& list) {
        json out = json::array();
        for (const auto& g : list) {
            out.push_back(selected_gpu_to_json(g));
        }
        return out;
    };
    const json gpus = cards_json(plan.gpus);
    json domains = json::array();
    for (const auto& d : plan.domains) {
        domains.push_back({{"uri", d.uri},
                           {"name", d.name},
                           {"before_xml", opt_string(d.before_xml)},
                           {"after_xml", d.after_xml},
                           {"reasons", d.reasons}});
    }
    json refusals = json::array();
    for (const auto& r : plan.refusals) {
        refusals.push_back({{"message", r.message}, {"hints", r.hints}});
    }
    return {
        {"schema", k_plan_schema},
        {"request", request_to_json(plan.request)},
        {"refused", plan.refused()},
        {"changes_pending", !plan.refused() && !plan.empty()},
        {"files", files},
        {"commands", commands},
        {"kernel_args", {{"add", plan.kernel_args.add}, {"remove", plan.kernel_args.remove}}},
        {"vfio_ids", plan.vfio_ids},
        {"binding", plan.binding},
        {"gpus", gpus},
        {"nvswitches", cards_json(plan.nvswitches)},
        {"domains", domains},
        {"warnings", plan.warnings},
        {"refusals", refusals},
        {"notes", plan.notes},
    };
}

namespace {

mode_t file_mode_from(const std::string& mode, const std::string& w)
{
    char* end = nullptr;
    const unsigned long m = std::strtoul(mode.c_str(), &end, 8);
    if (mode.empty() || end == nullptr || *end != '\0' || m > 07777) {
        throw ParseError{w + ".mode must be an octal mode like 0644"};
    }
    return static_cast<mode_t>(m);
}

// One entry of "files": a host path without '..', an action, and contents
// that agree with the action and with their checksums.
FileChange file_change_from(const json& f, const std::string& w)
{
    FileChange c;
    c.path = get_string(f, "path", w);
    if (c.path.empty() || c.path.front() != '/' || c.path.find("/../") != std::string::npos || c.path.ends_with("/..")) {
        throw ParseError{w + ".path must be an absolute host path without '..'"};
    }
    const auto action = file_action_from(get_string(f, "action", w));
    if (!action) {
        throw ParseError{w + ".action must be create, modify or delete"};
    }
    c.action = *action;
    c.after = get_opt_string(f, "content", w);
    c.before = get_opt_string(f, "before", w);
    if (f.contains("encoding") && !f["encoding"].is_null()) {
        if (get_string(f, "encoding", w) != "base64") {
            throw ParseError{w + ".encoding must be base64 (or absent, for text)"};
        }
        c.binary = true;
        for (auto* v : {&c.after, &c.before}) {
            if (*v) {
                auto bytes = util::base64_decode(**v);
                if (!bytes) {
                    throw ParseError{w + ".content and .before must be base64 when the encoding is base64"};
                }
                *v = std::move(*bytes);
            }
        }
    }
    c.before_sha256 = get_opt_string(f, "before_sha256", w);
    if ((c.action == FileAction::remove) != !c.after) {
        throw ParseError{w + ".content must be null exactly when the action is delete"};
    }
    if ((c.action == FileAction::create) != !c.before_sha256) {
        throw ParseError{w + ".before_sha256 must be null exactly when the action is create"};
    }
    if (c.before && c.before_sha256 && util::sha256_hex(*c.before) != *c.before_sha256) {
        throw ParseError{w + ".before does not match before_sha256"};
    }
    if (f.contains("after_sha256") && !f["after_sha256"].is_null() && c.after
        && util::sha256_hex(*c.after) != get_string(f, "after_sha256", w)) {
        throw ParseError{w + ".content does not match after_sha256"};
    }
    if (f.contains("mode")) {
        c.mode = file_mode_from(get_string(f, "mode", w), w);
    }
    c.reasons = get_strings(f, "reasons", w);
    return c;
}

PlannedCommand command_from(const json& c, const std::string& w)
{
    PlannedCommand pc;
    pc.argv = get_strings(c, "argv", w);
    if (pc.argv.empty()) {
        throw ParseError{w + ".argv is empty"};
    }
    pc.reason = c.contains("reason") ? get_string(c, "reason", w) : std::string();
    return pc;
}

SelectedGpu gpu_from(const json& g, const std::string& w)
{
    SelectedGpu gpu;
    gpu.slot = get_string(g, "slot", w);
    gpu.name = g.contains("name") ? get_string(g, "name", w) : std::string();
    gpu.functions = get_strings(g, "functions", w);
    gpu.ids = get_strings(g, "ids", w, false);
    if (g.contains("iommu_groups")) {
        for (const auto& n : get_array(g, "iommu_groups", w)) {
            if (!n.is_number_integer()) {
                throw ParseError{w + ".iommu_groups must hold integers"};
            }
            gpu.iommu_groups.push_back(n.get<int>());
        }
    }
    gpu.boot_vga = get_bool(g, "boot_vga", w, false);
    return gpu;
}

DomainChange domain_from(const json& d, const std::string& w)
{
    DomainChange dc;
    dc.uri = get_string(d, "uri", w);
    dc.name = get_string(d, "name", w);
    dc.before_xml = get_opt_string(d, "before_xml", w);
    dc.after_xml = get_string(d, "after_xml", w);
    dc.reasons = get_strings(d, "reasons", w, false);
    return dc;
}

// Each element of the array doc[key], read by `one` with its name ("key[i]").
template<typename T, typename Read>
void read_each(const json& doc, const char* key, std::vector<T>& out, Read one)
{
    std::size_t i = 0;
    for (const auto& e : get_array(doc, key, "plan")) {
        out.push_back(one(e, std::string(key) + "[" + std::to_string(i++) + "]"));
    }
}

Plan plan_from_object(const json& doc)
{
    if (!doc.is_object()) {
        throw ParseError{"the document is not a JSON object"};
    }
    const std::string schema = get_string(doc, "schema", "plan");
    if (schema != k_plan_schema) {
        throw ParseError{"schema is '" + schema + "', expected '" + k_plan_schema + "'"};
    }
    Plan plan;
    plan.request = parse_request(field(doc, "request", "plan"));
    read_each(doc, "files", plan.files, file_change_from);
    read_each(doc, "commands", plan.commands, command_from);
    const auto& ka = field(doc, "kernel_args", "plan");
    plan.kernel_args.add = get_strings(ka, "add", "kernel_args");
    plan.kernel_args.remove = get_strings(ka, "remove", "kernel_args");
    plan.vfio_ids = get_strings(doc, "vfio_ids", "plan");
    plan.binding = doc.contains("binding") ? get_string(doc, "binding", "plan") : std::string();
    read_each(doc, "gpus", plan.gpus, gpu_from);
    if (doc.contains("nvswitches")) {
        read_each(doc, "nvswitches", plan.nvswitches, gpu_from);
    }
    if (doc.contains("domains")) {
        read_each(doc, "domains", plan.domains, domain_from);
    }
    plan.warnings = get_strings(doc, "warnings", "plan");
    read_each(doc, "refusals", plan.refusals, [](const json& r, const std::string& w) {
        return Refusal{get_string(r, "message", w), get_strings(r, "hints", w, false)};
    });
    plan.notes = get_strings(doc, "notes", "plan", false);
    return plan;
}

} // namespace

json selected_gpu_to_json(const SelectedGpu& gpu)
{
    return {
        {"slot", gpu.slot},        {"name", gpu.name}, {"functions", gpu.functions}, {"ids", gpu.ids}, {"iommu_groups", gpu.iommu_groups},
        {"boot_vga", gpu.boot_vga}};
}

Result<SelectedGpu> selected_gpu_from_json(const nlohmann::json& doc, std::string_view where)
{
    try {
        if (!doc.is_object()) {
            throw ParseError{std::string(where) + " must be an object"};
        }
        return gpu_from(doc, std::string(where));
    } catch (const ParseError& e) {
        return fail(Errc::parse, e.message);
    }
}

Result<Plan> plan_from_json(const nlohmann::json& doc)
{
    try {
        return plan_from_object(doc);
    } catch (const ParseError& e) {
        return fail(Errc::parse, "not a valid passthru.plan/1 plan: " + e.message);
    } catch (const nlohmann::json::exception& e) {
        return fail(Errc::parse, std::string("not a valid passthru.plan/1 plan: ") + e.what());
    }
}

} // namespace passthru::plan
