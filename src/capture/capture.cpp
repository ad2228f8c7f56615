// SPDX-License-Identifier: GPL-2.0-or-later
#include "capture/capture.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "explain/task_log.hpp"
#include "util/strings.hpp"
#include "util/term.hpp"

namespace passthru::capture {

namespace {

constexpr const char* k_vm_config_dir = "/etc/pve/qemu-server";
// The task lists and logs explain reads (explain/task_log.hpp).
constexpr std::string_view k_task_dir = explain::k_task_dir;

std::string iso_utc(std::time_t when)
{
    std::tm tm{};
    ::gmtime_r(&when, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// The files that name the host and the cluster's nodes, read for the names
// even when scan and plan did not read them (they are not packed then).
constexpr std::array<std::string_view, 9> k_name_files{"/etc/hostname",
                                                       "/etc/mailname",
                                                       "/etc/hosts",
                                                       "/etc/resolv.conf",
                                                       "/etc/pve/corosync.conf",
                                                       "/etc/corosync/corosync.conf",
                                                       "/etc/pve/mapping/pci.cfg",
                                                       "/etc/pve/mapping/usb.cfg",
                                                       "/etc/pve/storage.cfg"};

// The host's and the cluster's names (Redactor::learn): from every packed
// file, the files of k_name_files, and every node of /etc/pve/nodes.
void learn_names(Redactor& redactor, const util::HostFs& fs, const std::vector<Member>& members)
{
    const std::string nodes = "/etc/pve/nodes/";
    for (const auto& m : members) {
        if (m.type == MemberType::file) {
            redactor.learn(m.path, m.data);
        }
        redactor.learn("", m.path);
        if (m.path.starts_with(nodes) && m.path.find('/', nodes.size()) == std::string::npos) {
            redactor.add_hostname(m.path.substr(nodes.size()));
        }
    }
    for (const auto path : k_name_files) {
        if (auto text = fs.read_file(path)) {
            redactor.learn(path, *text);
        }
    }
    if (const auto names = fs.list_dir("/etc/pve/nodes")) {
        for (const auto& name : *names) {
            redactor.add_hostname(name);
        }
    }
}

std::string manifest_text(const CaptureResult& result, const Redactor& redactor, const CaptureOptions& options)
{
    nlohmann::json redacted = nlohmann::json::array();
    for (const auto& [key, count] : redactor.counts()) {
        redacted.push_back({{"file", key.first}, {"kind", to_string(key.second)}, {"count", count}});
    }
    const nlohmann::json doc = {
        {"schema", "passthru.capture/1"},
        {"passthru_version", options.version},
        {"created", iso_utc(options.when)},
        {"kept", {{"hostnames", !options.redact.hostnames}, {"addresses", !options.redact.addresses}}},
        {"members",
         {{"files", result.files},
          {"placeholders", result.placeholders},
          {"directories", result.directories},
          {"symlinks", result.symlinks}}},
        {"redacted", redacted},
        {"skipped", result.skipped},
    };
    return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// Well-formed UTF-8 (no overlong forms, surrogates or code points past
// U+10FFFF): what a tar member's name must be.
bool valid_utf8(std::string_view s)
{
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        unsigned cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1fU;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0fU;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07U;
        } else {
            return false;
        }
        for (std::size_t k = 1; k <= n; ++k) {
            if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xc0U) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3fU);
        }
        const unsigned min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            return false;
        }
        i += n + 1;
    }
    return true;
}

// Members whose name (or link target) is not UTF-8 cannot be tar members
// a tool can unpack the same everywhere: they are left out, and named in
// the manifest and the summary with their bytes escaped.
void skip_unnamable(std::vector<Member>& members, std::vector<std::string>& skipped)
{
    std::erase_if(members, [&skipped](const Member& m) {
        if (valid_utf8(m.path) && (m.type != MemberType::symlink || valid_utf8(m.data))) {
            return false;
        }
        skipped.push_back(util::terminal_safe(m.path, false));
        return true;
    });
}

void count_members(CaptureResult& result, const std::vector<Member>& members)
{
    for (const auto& m : members) {
        result.files += m.type == MemberType::file ? 1 : 0;
        result.placeholders += m.placeholder ? 1 : 0;
        result.directories += m.type == MemberType::directory ? 1 : 0;
        result.symlinks += m.type == MemberType::symlink ? 1 : 0;
    }
}

} // namespace

std::vector<std::uint64_t> vm_ids(const util::HostFs& fs)
{
    std::vector<std::uint64_t> ids;
    const auto names = fs.list_dir(k_vm_config_dir);
    if (!names) {
        return ids;
    }
    for (const auto& name : *names) {
        const std::string_view stem = std::string_view(name).substr(0, name.size() > 5 ? name.size() - 5 : 0);
        if (name.ends_with(".conf") && !stem.empty() && stem.size() < 10
            && stem.find_first_not_of("0123456789") == std::string_view::npos) {
            ids.push_back(std::stoull(std::string(stem)));
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

void read_vm_history(const util::HostFs& fs)
{
    for (const auto id : vm_ids(fs)) {
        (void)fs.read_file(std::string(k_vm_config_dir) + "/" + std::to_string(id) + ".conf");
    }
    for (const auto& list : explain::k_task_lists) {
        (void)fs.read_file(std::string(k_task_dir) + "/" + std::string(list.name));
    }
    util::HostFs quiet = fs;
    quiet.record_reads(nullptr);
    const auto subdirs = quiet.list_dir(std::string(k_task_dir));
    if (!subdirs) {
        return;
    }
    for (const auto& sub : *subdirs) {
        const std::string dir = std::string(k_task_dir) + "/" + sub;
        if (!quiet.is_dir(dir)) {
            continue;
        }
        const auto names = quiet.list_dir(dir);
        for (const auto& name : names ? *names : std::vector<std::string>{}) {
            // UPID:NODE:PID:PSTART:STARTTIME:qmstart:VMID:USER:
            if (name.starts_with("UPID:") && name.find(":qmstart:") != std::string::npos) {
                (void)fs.read_file(dir + "/" + name);
            }
        }
    }
}

Result<CaptureResult> pack(const util::HostFs& fs, const std::map<std::string, util::ReadLog::Entry>& log, const CaptureOptions& options)
{
    std::vector<Member> members = collect_members(fs, log);
    Redactor redactor(options.redact);
    learn_names(redactor, fs, members);
    for (auto& m : members) {
        const std::string original = m.path;
        m.path = redactor.path(original);
        if (m.type == MemberType::symlink) {
            m.data = redactor.link_target(original, m.data);
        } else if (m.type == MemberType::file) {
            m.data = redactor.content(original, std::move(m.data));
        }
    }
    std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) { return a.path < b.path; });
    CaptureResult result;
    skip_unnamable(members, result.skipped);
    count_members(result, members);
    std::set<std::string> files;
    for (const auto& [key, count] : redactor.counts()) {
        result.redacted[key.second] += count;
        files.insert(key.first);
    }
    result.redacted_files = files.size();
    result.manifest = manifest_text(result, redactor, options);
    members.insert(members.begin(), Member{std::string("/") + k_manifest_name, MemberType::file, result.manifest, 0644, false});
    auto archive = write_archive(members, options.compression, options.when);
    if (!archive) {
        return tl::unexpected(archive.error());
    }
    result.archive = std::move(*archive);
    return result;
}

} // namespace passthru::capture
