// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/manifest_check.hpp"

#include <algorithm>
#include <string_view>

#include "format/grammar.hpp"
#include "plan/after_step.hpp"
#include "plan/paths.hpp"
#include "util/command_runner.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

namespace {

// Debian's base-passwd gives www-data the fixed gid 33; Proxmox VE's
// /etc/pve files are root:www-data (docs/facts.md: journal-owners).
constexpr gid_t k_www_data_gid = 33;

// Absolute, no empty, "." or ".." component, no trailing slash.
bool normalised(std::string_view path)
{
    if (path.size() < 2 || path.front() != '/' || path.back() == '/' || path.find("//") != std::string_view::npos) {
        return false;
    }
    for (const auto& comp : util::split(path, "/")) {
        if (comp == "." || comp == "..") {
            return false;
        }
    }
    return true;
}

bool safe_word(const std::string& word)
{
    return !word.empty()
           && std::none_of(word.begin(), word.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

Error refused(const Manifest& m, const std::string& why)
{
    return Error(Errc::precondition, "generation " + std::to_string(m.id) + "'s manifest was not written by passthru: " + why)
        .with_hint("passthru will not act on it; inspect " + Journal::dir(m.id)
                   + "/manifest.json and restore the files by hand from its before/ directory");
}

Result<void> check_file(const Manifest& m, const JournalFile& f, const AllowedOwners& owners)
{
    if (!is_passthru_path(f.path)) {
        return tl::unexpected(refused(m, "it names " + f.path + ", which passthru does not write"));
    }
    if ((f.mode & ~static_cast<mode_t>(0777)) != 0 || (f.mode & 0002) != 0) {
        return tl::unexpected(refused(m, f.path + " has a mode passthru never sets (setuid, setgid, sticky or world-writable)"));
    }
    const bool uid_ok = std::find(owners.uids.begin(), owners.uids.end(), f.uid) != owners.uids.end();
    const bool gid_ok = std::find(owners.gids.begin(), owners.gids.end(), f.gid) != owners.gids.end();
    if (!uid_ok || !gid_ok) {
        return tl::unexpected(
            refused(m, f.path + " has an owner passthru never restores (" + std::to_string(f.uid) + ":" + std::to_string(f.gid) + ")"));
    }
    const bool agrees = f.action == FileAction::create ? !f.before_sha256.has_value() : f.before_sha256.has_value();
    const bool hex = [&] {
        for (const auto* sha : {&f.before_sha256, &f.after_sha256}) {
            if (*sha && ((*sha)->size() != 64 || (*sha)->find_first_not_of("0123456789abcdef") != std::string::npos)) {
                return false;
            }
        }
        return true;
    }();
    if (!agrees || !hex) {
        return tl::unexpected(refused(m, f.path + ": its action and checksums do not agree"));
    }
    return {};
}

Result<void> check_created_dirs(const Manifest& m)
{
    for (const auto& d : m.created_dirs) {
        const bool parent_of_file =
            std::any_of(m.files.begin(), m.files.end(), [&](const JournalFile& f) { return f.path.starts_with(d + "/"); });
        if (!normalised(d) || !parent_of_file) {
            return tl::unexpected(refused(m, "it names the directory " + d + ", which holds none of its files"));
        }
    }
    return {};
}

Result<void> check_command(const Manifest& m, const JournalCommand& c)
{
    if (!is_planned_after_step(c.argv)) {
        return tl::unexpected(refused(m, "after-step '" + util::shell_quote(c.argv) + "' is not one passthru runs"));
    }
    for (const auto& r : c.created) {
        if (r.kind != "volume" || !plan::is_volume_id(r.id) || !format::matches(format::Grammar::vm_id, r.vm)
            || r.config_key != "efidisk0") {
            return tl::unexpected(refused(m, "it records a volume passthru's after-steps do not allocate ('" + r.id + "')"));
        }
    }
    return {};
}

} // namespace

AllowedOwners allowed_owners(uid_t root_uid, gid_t root_gid)
{
    AllowedOwners out;
    out.gids.push_back(k_www_data_gid);
    if (root_uid != 0) {
        out.uids.push_back(root_uid);
    }
    if (root_gid != 0) {
        out.gids.push_back(root_gid);
    }
    return out;
}

bool is_passthru_path(const std::string& path)
{
    return normalised(path) && plan::is_written_path(path);
}

bool is_planned_after_step(const std::vector<std::string>& argv)
{
    // The shapes are the after-step table's (plan/after_step.cpp): exactly
    // the argv passthru plans, nothing a tampered manifest could add.
    return !argv.empty() && std::all_of(argv.begin(), argv.end(), safe_word) && plan::recorded_step_kind(argv).has_value();
}

Result<void> check_manifest(const Manifest& m, const AllowedOwners& owners)
{
    for (const auto& f : m.files) {
        if (auto r = check_file(m, f, owners); !r) {
            return r;
        }
    }
    if (auto r = check_created_dirs(m); !r) {
        return r;
    }
    for (const auto& c : m.commands) {
        if (auto r = check_command(m, c); !r) {
            return r;
        }
    }
    for (const auto& d : m.domains) {
        if (!plan::is_plain_file_name(d.name) || !safe_word(d.uri)) {
            return tl::unexpected(refused(m, "it names a libvirt domain passthru cannot have defined ('" + d.name + "')"));
        }
    }
    for (const auto u : m.undoes) {
        if (u == 0 || u >= m.id) {
            return tl::unexpected(refused(m, "it undoes generation " + std::to_string(u) + ", which is not an earlier one"));
        }
    }
    return {};
}

} // namespace passthru::apply
