// SPDX-License-Identifier: GPL-2.0-or-later
// A manifest is checked before rollback or recovery acts on it, as a saved
// plan is (plan/saved_plan.hpp): it may only name what passthru itself
// writes and runs. Paths: absolute, normalised, among the files and
// directories the planners write; modes: no setuid, setgid or sticky bit,
// not world-writable; owners: root, www-data's group (Proxmox VE's
// /etc/pve) or the owner of the root; file actions agree with their
// checksums; created directories are parents of journaled files; after-steps
// are exact commands of the after-step table, matched by their full argv;
// volumes and domain names follow their grammars. A manifest edited by hand
// is refused (Errc::precondition, exit 3) before anything is written.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "apply/journal.hpp"
#include "util/error.hpp"

namespace passthru::apply {

// Who may own a journaled file: root, and the owner of the tree (--root).
struct AllowedOwners
{
    std::vector<uid_t> uids{0};
    std::vector<gid_t> gids{0};
};

// The owners allowed on the host whose root directory has this owner.
AllowedOwners allowed_owners(uid_t root_uid, gid_t root_gid);

// True when `path` is a file passthru writes (or a pre-image of one).
bool is_passthru_path(const std::string& path);

// True when argv is an after-step passthru plans, by its full argv.
bool is_planned_after_step(const std::vector<std::string>& argv);

// The first thing in `m` that passthru does not write or run; Errc::precondition.
Result<void> check_manifest(const Manifest& m, const AllowedOwners& owners);

} // namespace passthru::apply
