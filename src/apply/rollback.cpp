// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/rollback.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "util/sha256.hpp"
#include "util/strings.hpp"

namespace passthru::apply {

std::optional<Manifest> find_interrupted(const Journal& journal, LockHeld lock)
{
    if (lock == LockHeld::by_other_or_nobody && journal.locked_by_other()) {
        return std::nullopt;
    }
    auto ids = journal.ids();
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
        auto m = journal.load(*it);
        if (!m) {
            // Neither skipped nor acted on: a manifest passthru did not
            // write could hide the generation that really was interrupted.
            throw m.error();
        }
        if (m->state == GenerationState::pending || m->state == GenerationState::restore_failed) {
            return std::move(*m);
        }
    }
    return std::nullopt;
}

std::vector<Manifest> active_generations(const std::vector<Manifest>& all)
{
    std::set<std::uint64_t> undone;
    for (const auto& m : all) {
        if (m.kind == GenerationKind::rollback && m.state == GenerationState::committed) {
            undone.insert(m.undoes.begin(), m.undoes.end());
        }
    }
    std::vector<Manifest> out;
    for (const auto& m : all) {
        if (m.kind == GenerationKind::apply && m.state == GenerationState::committed && undone.count(m.id) == 0) {
            out.push_back(m);
        }
    }
    return out;
}

std::optional<Manifest> newest_configuring(const std::vector<Manifest>& active)
{
    for (auto it = active.rbegin(); it != active.rend(); ++it) {
        if (!it->request || !it->request->kernel) {
            return *it;
        }
    }
    return std::nullopt;
}

std::optional<std::uint64_t> steps_already_recorded(const std::vector<Manifest>& all, const std::vector<plan::PlannedCommand>& commands)
{
    if (commands.empty()) {
        return std::nullopt;
    }
    const auto active = active_generations(all);
    std::uint64_t newest = 0;
    for (const auto& want : commands) {
        std::optional<std::uint64_t> found;
        for (auto it = active.rbegin(); it != active.rend() && !found; ++it) {
            for (const auto& c : it->commands) {
                if (c.argv == want.argv && c.status == CommandStatus::recorded) {
                    found = it->id;
                    break;
                }
            }
        }
        if (!found) {
            return std::nullopt;
        }
        newest = std::max(newest, *found);
    }
    return newest;
}

namespace {

// What rollback does about each after-step of the undone generations:
// re-run the regenerators (once each), leave file edits to the file restore,
// delete or report the volumes they allocated, and list manual undos.
void plan_step_undo(const std::vector<const Manifest*>& undone, RemoveVolumes remove_volumes, RollbackPlan& out)
{
    std::set<std::vector<std::string>> seen_cmds;
    for (const auto* m : undone) {
        const std::string gen = " (generation " + std::to_string(m->id) + ")";
        for (const auto& cmd : m->commands) {
            if (cmd.undo == plan::StepUndo::rerun) {
                if (seen_cmds.insert(cmd.argv).second) {
                    out.spec.commands.push_back(
                        plan::PlannedCommand{cmd.argv, "re-run after restoring generation " + std::to_string(m->id)});
                }
                continue;
            }
            if (cmd.undo == plan::StepUndo::command) {
                // Like a re-run: under --root both are recorded, on a host both run.
                const auto undo = plan::after_step_effects(cmd.argv).undo_argv;
                if (seen_cmds.insert(undo).second) {
                    out.spec.commands.push_back(plan::PlannedCommand{undo, "undoes " + util::shell_quote(cmd.argv) + gen});
                }
                continue;
            }
            if (cmd.status != CommandStatus::ran) {
                continue; // recorded under --root or never run: it changed nothing
            }
            for (const auto& r : cmd.created) {
                const auto free = plan::free_volume_argv(r.id);
                const std::string what =
                    "volume " + r.id + " (VM " + r.vm + "'s " + r.config_key + ", allocated by " + util::shell_quote(cmd.argv) + gen + ")";
                if (remove_volumes == RemoveVolumes::yes) {
                    out.spec.commands.push_back(plan::PlannedCommand{free, "delete " + what});
                } else {
                    out.kept.push_back(what + " is kept; once the VM config is restored it is no longer used: delete it with: "
                                       + util::shell_quote(free) + " (or roll back with --remove-volumes)");
                }
            }
            if (cmd.undo == plan::StepUndo::manual) {
                out.not_undone.push_back(
                    util::shell_quote(cmd.argv) + gen
                    + (cmd.manual_undo.empty() ? ": no known undo" : "; undo it by hand: " + util::join(cmd.manual_undo, "; ")));
            }
        }
    }
}

} // namespace

namespace {

// The generations a rollback undoes, newest first: all active ones from
// `to` on, or the newest active one.
std::vector<const Manifest*> generations_to_undo(const std::vector<Manifest>& all, const std::vector<Manifest>& active,
                                                 std::optional<std::uint64_t> to)
{
    if (active.empty()) {
        throw Error(Errc::not_found, "nothing to roll back: no applied generation is active")
            .with_hint("'passthru history' lists the generations");
    }
    std::vector<const Manifest*> undone;
    if (!to) {
        undone.push_back(&active.back());
        return undone;
    }
    const auto target = std::find_if(all.begin(), all.end(), [&](const Manifest& m) { return m.id == *to; });
    if (target == all.end()) {
        throw Error(Errc::not_found, "there is no generation " + std::to_string(*to)).with_hint("'passthru history' lists the generations");
    }
    const bool is_active = std::any_of(active.begin(), active.end(), [&](const Manifest& m) { return m.id == *to; });
    if (!is_active) {
        std::string why = target->kind == GenerationKind::rollback      ? "it is a rollback"
                          : target->state != GenerationState::committed ? "it is " + std::string(to_string(target->state))
                                                                        : "it was already undone";
        throw Error(Errc::precondition, "cannot roll back to before generation " + std::to_string(*to) + ": " + why)
            .with_hint("'passthru history' lists the generations; --to takes an active apply generation");
    }
    for (auto it = active.rbegin(); it != active.rend(); ++it) {
        if (it->id >= *to) {
            undone.push_back(&*it);
        }
    }
    return undone;
}

// Per path: the earliest undone generation holds the content to restore,
// the newest one the content the file should have now.
struct RestoreTarget
{
    const Manifest* earliest = nullptr;
    const JournalFile* earliest_file = nullptr;
    const JournalFile* newest_file = nullptr;
};

// The files the undone generations touched, newest generation first and
// its files in reverse, each with its target.
std::vector<std::pair<std::string, RestoreTarget>> restore_targets(const std::vector<const Manifest*>& undone)
{
    std::vector<std::string> order;
    std::map<std::string, RestoreTarget> targets;
    for (const auto* m : undone) {
        for (auto it = m->files.rbegin(); it != m->files.rend(); ++it) {
            auto [pos, inserted] = targets.try_emplace(it->path);
            if (inserted) {
                order.push_back(it->path);
                pos->second.newest_file = &*it;
            }
            pos->second.earliest = m;
            pos->second.earliest_file = &*it;
        }
    }
    std::vector<std::pair<std::string, RestoreTarget>> out;
    out.reserve(order.size());
    for (auto& path : order) {
        const RestoreTarget t = targets.at(path);
        out.emplace_back(std::move(path), t);
    }
    return out;
}

// The change that puts one file back; nullopt when it already is. Notes
// drift (the file is not what the newest generation left).
std::optional<Change> restore_change(const Journal& journal, const std::string& path, const RestoreTarget& t,
                                     std::vector<std::string>& drifted)
{
    const util::HostFs& fs = journal.fs();
    const util::FileInfo info = fs.stat(path);
    std::optional<std::string> now_sha;
    if (info.type == util::FileType::regular) {
        auto text = fs.read_file(path);
        if (!text) {
            throw text.error();
        }
        now_sha = util::sha256_hex(*text);
    } else if (info.type != util::FileType::missing) {
        throw Error(Errc::precondition, "cannot roll back " + path + ": it is no longer a regular file")
            .with_hint("restore it by hand from " + Journal::pre_image_path(t.earliest->id, path));
    }
    if (now_sha != t.newest_file->after_sha256) {
        drifted.push_back(path);
    }
    const auto& want_sha = t.earliest_file->before_sha256;
    if (now_sha == want_sha) {
        return std::nullopt; // already as it was
    }
    Change c;
    c.path = path;
    c.expected_before_sha256 = now_sha;
    c.mode = t.earliest_file->mode;
    if (!want_sha) {
        c.action = FileAction::remove;
        return c;
    }
    auto pre = journal.read_pre_image(t.earliest->id, path);
    if (!pre) {
        throw Error(Errc::io, "cannot read the pre-image of " + path + " in generation " + std::to_string(t.earliest->id) + ": "
                                  + pre.error().what());
    }
    if (util::sha256_hex(*pre) != *want_sha) {
        throw Error(Errc::io, "the pre-image of " + path + " in generation " + std::to_string(t.earliest->id)
                                  + " does not match its recorded checksum");
    }
    c.after = std::move(*pre);
    c.action = now_sha ? FileAction::modify : FileAction::create;
    c.exact = util::FileOwnership{t.earliest_file->mode, t.earliest_file->uid, t.earliest_file->gid};
    return c;
}

} // namespace

RollbackPlan plan_rollback(const Journal& journal, std::optional<std::uint64_t> to, Force force, RemoveVolumes remove_volumes)
{
    std::vector<Manifest> all;
    for (const auto id : journal.ids()) {
        auto m = journal.load(id);
        if (!m) {
            // Unreadable (exit 1) or not written by passthru (exit 3).
            throw Error(m.error()).with_hint("passthru will not roll back over a journal it cannot read or trust");
        }
        all.push_back(std::move(*m));
    }
    const auto active = active_generations(all);
    const std::vector<const Manifest*> undone = generations_to_undo(all, active, to); // newest first

    RollbackPlan out;
    for (const auto& a : active) {
        out.active.push_back(a.id);
    }
    out.spec.kind = GenerationKind::rollback;
    out.spec.rollback_to_before = undone.back()->id;
    for (const auto* m : undone) {
        out.undoes.push_back(m->id);
    }
    out.spec.undoes = out.undoes;
    for (const auto& [path, target] : restore_targets(undone)) {
        if (auto c = restore_change(journal, path, target, out.drifted)) {
            out.spec.files.push_back(std::move(*c));
        }
    }
    if (!out.drifted.empty() && force == Force::no) {
        Error err(Errc::conflict, std::to_string(out.drifted.size()) + " file(s) changed since generation "
                                      + std::to_string(undone.front()->id) + " was applied: " + util::join(out.drifted, ", "));
        err.with_hint("rolling back would throw those edits away; look at them, then use --force to roll back anyway");
        throw err;
    }

    plan_step_undo(undone, remove_volumes, out);
    for (const auto* m : undone) {
        for (auto it = m->created_dirs.rbegin(); it != m->created_dirs.rend(); ++it) {
            out.spec.remove_dirs.push_back(*it);
        }
        for (const auto& d : m->domains) {
            out.not_undone.push_back(
                "libvirt domain " + d.name + " (generation " + std::to_string(m->id)
                + "): " + (d.had_before ? "virsh define " + Journal::domain_pre_image_path(m->id, d.name) : "virsh undefine " + d.name));
        }
    }
    return out;
}

namespace {

// The checksum of a regular file, nullopt when it is missing or not regular.
std::optional<std::string> current_sha(const util::HostFs& fs, const std::string& path, util::FileType type)
{
    if (type != util::FileType::regular) {
        return std::nullopt;
    }
    auto text = fs.read_file(path);
    if (!text) {
        throw text.error();
    }
    return util::sha256_hex(*text);
}

} // namespace

std::vector<std::string> recovery_drift(const Journal& journal, const Manifest& m)
{
    const util::HostFs& fs = journal.fs();
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& f : m.files) {
        if (!seen.insert(f.path).second) {
            continue;
        }
        const util::FileType type = fs.stat(f.path).type;
        if (type != util::FileType::regular && type != util::FileType::missing) {
            continue;
        }
        const auto now = current_sha(fs, f.path, type);
        if (now != f.before_sha256 && now != f.after_sha256) {
            out.push_back(f.path);
        }
    }
    return out;
}

void keep_drifted(const Journal& journal, const Manifest& m, const std::vector<std::string>& drifted)
{
    const util::HostFs& fs = journal.fs();
    for (const auto& path : drifted) {
        if (fs.stat(path).type != util::FileType::regular) {
            continue; // removed since: nothing to keep
        }
        auto text = fs.read_file(path);
        if (!text) {
            throw text.error();
        }
        const std::string target = Journal::kept_path(m.id, path);
        if (auto r = fs.create_directories(util::dir_name(target)); !r) {
            throw r.error();
        }
        if (auto r = fs.write_file_atomic(target, *text, 0600, util::FsSync::yes); !r) {
            throw Error(Errc::io, "cannot keep the changed " + path + " before restoring it: " + r.error().what());
        }
    }
}

} // namespace passthru::apply
