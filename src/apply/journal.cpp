// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/journal.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "apply/manifest_check.hpp"
#include "plan/plan_json.hpp"
#include "util/fault.hpp"
#include "util/json.hpp"
#include "util/strings.hpp"
#include "util/temp_name.hpp"

namespace passthru::apply {

namespace {

using nlohmann::json;

std::string mode_text(mode_t mode)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
    return buf;
}

std::optional<mode_t> parse_mode(const std::string& text)
{
    if (text.empty() || text.size() > 5 || text.find_first_not_of("01234567") != std::string::npos) {
        return std::nullopt;
    }
    return static_cast<mode_t>(std::stoul(text, nullptr, 8));
}

json opt_string(const std::optional<std::string>& s)
{
    return s ? json(*s) : json(nullptr);
}

std::optional<std::string> get_opt_string(const json& obj, const char* key)
{
    if (!obj.contains(key) || obj.at(key).is_null()) {
        return std::nullopt;
    }
    return obj.at(key).get<std::string>();
}

template<typename Enum, std::size_t N>
std::optional<Enum> enum_from(const std::string& text, const std::array<Enum, N>& values)
{
    for (Enum v : values) {
        if (to_string(v) == text) {
            return v;
        }
    }
    return std::nullopt;
}

// The manifest is ours; a malformed one is reported, never trusted.
Error bad_manifest(std::uint64_t id, const std::string& why)
{
    return Error(Errc::parse, "generation " + std::to_string(id) + " has a malformed manifest: " + why)
        .with_hint("inspect " + Journal::dir(id) + "/manifest.json; the pre-images in its before/ directory are intact copies");
}

} // namespace

std::string_view to_string(GenerationKind kind)
{
    switch (kind) {
    case GenerationKind::apply:
        return "apply";
    case GenerationKind::rollback:
        return "rollback";
    }
    return "apply";
}

std::string_view to_string(GenerationState state)
{
    switch (state) {
    case GenerationState::pending:
        return "pending";
    case GenerationState::committed:
        return "committed";
    case GenerationState::rolled_back:
        return "rolled-back";
    case GenerationState::restore_failed:
        return "restore-failed";
    }
    return "pending";
}

std::string utc_now()
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

JournalCommand journal_command(const std::vector<std::string>& argv, std::string reason)
{
    JournalCommand jc;
    jc.argv = argv;
    jc.reason = std::move(reason);
    const auto effects = plan::after_step_effects(argv);
    jc.undo = effects.undo;
    jc.edits = effects.edits;
    jc.manual_undo = effects.manual;
    return jc;
}

namespace {

json manifest_request_json(const Manifest& m)
{
    if (m.rollback_to_before) {
        return json{{"rollback_to_before", *m.rollback_to_before}};
    }
    return m.request ? plan::request_to_json(*m.request) : json(nullptr);
}

json journal_commands_json(const std::vector<JournalCommand>& list)
{
    json commands = json::array();
    for (const auto& c : list) {
        json cmd{{"argv", c.argv}, {"reason", c.reason}, {"status", to_string(c.status)}};
        cmd["exit_code"] = c.exit_code ? json(*c.exit_code) : json(nullptr);
        cmd["undo"] = plan::to_string(c.undo);
        cmd["edits"] = c.edits;
        json created = json::array();
        for (const auto& r : c.created) {
            created.push_back({{"kind", r.kind}, {"id", r.id}, {"vm", r.vm}, {"config_key", r.config_key}});
        }
        cmd["created"] = std::move(created);
        cmd["manual_undo"] = c.manual_undo;
        if (!c.output.empty()) {
            cmd["output"] = c.output;
        }
        commands.push_back(std::move(cmd));
    }
    return commands;
}

} // namespace

std::string_view to_string(CommandStatus status)
{
    switch (status) {
    case CommandStatus::planned:
        return "planned";
    case CommandStatus::recorded:
        return "recorded";
    case CommandStatus::ran:
        return "ran";
    case CommandStatus::failed:
        return "failed";
    }
    return "planned";
}

std::optional<CommandStatus> command_status_from(std::string_view word)
{
    for (const auto status : {CommandStatus::planned, CommandStatus::recorded, CommandStatus::ran, CommandStatus::failed}) {
        if (to_string(status) == word) {
            return status;
        }
    }
    return std::nullopt;
}

json to_json(const Manifest& m)
{
    json files = json::array();
    for (const auto& f : m.files) {
        files.push_back({{"path", f.path},
                         {"action", to_string(f.action)},
                         {"before_sha256", opt_string(f.before_sha256)},
                         {"after_sha256", opt_string(f.after_sha256)},
                         {"mode", mode_text(f.mode)},
                         {"owner", {{"uid", f.uid}, {"gid", f.gid}}}});
    }
    json gpus = json::array();
    for (const auto& g : m.gpus) {
        gpus.push_back(plan::selected_gpu_to_json(g));
    }
    json domains = json::array();
    for (const auto& d : m.domains) {
        domains.push_back({{"uri", d.uri}, {"name", d.name}, {"had_before", d.had_before}, {"after_sha256", d.after_sha256}});
    }
    return json{{"schema", k_manifest_schema},
                {"id", m.id},
                {"kind", to_string(m.kind)},
                {"state", to_string(m.state)},
                {"created", m.created},
                {"finished", m.finished.empty() ? json(nullptr) : json(m.finished)},
                {"passthru_version", m.version},
                {"request", manifest_request_json(m)},
                {"gpus", std::move(gpus)},
                {"kernel_args", m.kernel_args},
                {"undoes", m.undoes},
                {"files", std::move(files)},
                {"created_dirs", m.created_dirs},
                {"commands", journal_commands_json(m.commands)},
                {"commands_started", m.commands_started},
                {"domains", std::move(domains)},
                {"error", m.error.empty() ? json(nullptr) : json(m.error)},
                {"manual_steps", m.manual_steps}};
}

namespace {

// The reading helpers throw ManifestError (or json::exception), turned into
// bad_manifest at the top.
struct ManifestError
{
    std::string why;
};

// "request": the plan's request (read for its shape only: a later passthru's
// checks must not make a recorded generation unreadable), a rollback's
// {"rollback_to_before": N}, or null.
void read_manifest_request(const json& doc, Manifest& m)
{
    const json request = doc.value("request", json(nullptr));
    if (request.is_null()) {
        return;
    }
    if (request.is_object() && request.contains("rollback_to_before")) {
        if (!request.at("rollback_to_before").is_number_unsigned()) {
            throw ManifestError{"request.rollback_to_before is not a generation number"};
        }
        m.rollback_to_before = request.at("rollback_to_before").get<std::uint64_t>();
        return;
    }
    auto read = plan::request_from_json(request, plan::RequestCheck::shape_only);
    if (!read) {
        throw ManifestError{read.error().what()};
    }
    m.request = std::move(*read);
}

void read_manifest_gpus(const json& doc, Manifest& m)
{
    std::size_t i = 0;
    for (const auto& g : doc.value("gpus", json::array())) {
        auto gpu = plan::selected_gpu_from_json(g, "gpus[" + std::to_string(i++) + "]");
        if (!gpu) {
            throw ManifestError{gpu.error().what()};
        }
        m.gpus.push_back(std::move(*gpu));
    }
}

JournalFile read_journal_file(const json& f, bool v1)
{
    JournalFile jf;
    jf.path = f.at("path").get<std::string>();
    const auto word = f.at("action").get<std::string>();
    const auto action = v1 && word == "remove" ? std::optional(FileAction::remove) : plan::file_action_from(word);
    auto mode = parse_mode(f.at("mode").get<std::string>());
    if (!action || !mode || jf.path.empty() || jf.path.front() != '/') {
        throw ManifestError{"bad file entry '" + jf.path + "'"};
    }
    jf.action = *action;
    jf.mode = *mode;
    jf.before_sha256 = get_opt_string(f, "before_sha256");
    jf.after_sha256 = get_opt_string(f, "after_sha256");
    jf.uid = f.at("owner").at("uid").get<uid_t>();
    jf.gid = f.at("owner").at("gid").get<gid_t>();
    return jf;
}

JournalCommand read_journal_command(const json& c)
{
    // Effects come from the table; journals written before they were
    // recorded get the same answer from their argv.
    JournalCommand jc = journal_command(c.at("argv").get<std::vector<std::string>>(), c.value("reason", ""));
    for (const auto& r : c.value("created", json::array())) {
        jc.created.push_back(
            JournalResource{r.at("kind").get<std::string>(), r.at("id").get<std::string>(), r.value("vm", ""), r.value("config_key", "")});
    }
    jc.output = c.value("output", std::vector<std::string>{});
    const auto status = command_status_from(c.value("status", std::string(to_string(CommandStatus::planned))));
    if (!status) {
        throw ManifestError{"unknown status of command '" + util::join(jc.argv, " ") + "'"};
    }
    jc.status = *status;
    if (c.contains("exit_code") && !c.at("exit_code").is_null()) {
        jc.exit_code = c.at("exit_code").get<int>();
    }
    return jc;
}

} // namespace

Result<Manifest> manifest_from_json(const json& doc)
{
    Manifest m;
    const std::uint64_t id =
        doc.is_object() && doc.contains("id") && doc.at("id").is_number_unsigned() ? doc.at("id").get<std::uint64_t>() : 0;
    try {
        const std::string schema = doc.is_object() ? doc.value("schema", "") : "";
        const bool v1 = schema == k_manifest_schema_v1;
        if (schema != k_manifest_schema && !v1) {
            return tl::unexpected(bad_manifest(id, "not a " + std::string(k_manifest_schema) + " document"));
        }
        m.id = id;
        auto kind = enum_from(doc.at("kind").get<std::string>(), std::array{GenerationKind::apply, GenerationKind::rollback});
        auto state =
            enum_from(doc.at("state").get<std::string>(), std::array{GenerationState::pending, GenerationState::committed,
                                                                     GenerationState::rolled_back, GenerationState::restore_failed});
        if (!kind || !state) {
            return tl::unexpected(bad_manifest(id, "unknown kind or state"));
        }
        m.kind = *kind;
        m.state = *state;
        m.created = doc.at("created").get<std::string>();
        m.finished = get_opt_string(doc, "finished").value_or("");
        m.version = doc.value("passthru_version", "");
        read_manifest_request(doc, m);
        read_manifest_gpus(doc, m);
        m.kernel_args = doc.value("kernel_args", std::vector<std::string>{});
        m.undoes = doc.value("undoes", std::vector<std::uint64_t>{});
        for (const auto& f : doc.at("files")) {
            m.files.push_back(read_journal_file(f, v1));
        }
        m.created_dirs = doc.value("created_dirs", std::vector<std::string>{});
        for (const auto& c : doc.at("commands")) {
            m.commands.push_back(read_journal_command(c));
        }
        m.commands_started = doc.value("commands_started", false);
        for (const auto& d : doc.value("domains", json::array())) {
            m.domains.push_back(JournalDomain{d.at("uri").get<std::string>(), d.at("name").get<std::string>(),
                                              d.at("had_before").get<bool>(), d.at("after_sha256").get<std::string>()});
        }
        m.error = get_opt_string(doc, "error").value_or("");
        m.manual_steps = doc.value("manual_steps", std::vector<std::string>{});
    } catch (const ManifestError& e) {
        return tl::unexpected(bad_manifest(id, e.why));
    } catch (const json::exception& e) {
        return tl::unexpected(bad_manifest(id, e.what()));
    }
    return m;
}

std::string Journal::dir(std::uint64_t id)
{
    return std::string(k_generations_dir) + "/" + std::to_string(id);
}

std::string Journal::pre_image_path(std::uint64_t id, std::string_view path)
{
    return dir(id) + "/before" + std::string(path);
}

std::string Journal::kept_path(std::uint64_t id, std::string_view path)
{
    return dir(id) + "/kept" + std::string(path);
}

std::string Journal::domain_pre_image_path(std::uint64_t id, std::string_view name)
{
    return dir(id) + "/domains/" + std::string(name) + ".xml";
}

std::vector<std::uint64_t> Journal::ids() const
{
    std::vector<std::uint64_t> out;
    auto names = m_fs.list_dir(k_generations_dir);
    if (!names) {
        if (m_fs.stat(k_generations_dir).type == util::FileType::missing) {
            return out; // no generation was ever recorded
        }
        // Never "no generations" while the host may be changed.
        throw Error(names.error()).with_hint("passthru cannot tell which generations exist; nothing was done");
    }
    for (const auto& name : *names) {
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        if (name.size() > 18 && name.front() != '0') {
            throw Error(Errc::precondition,
                        std::string(k_generations_dir) + "/" + name + " is out of range for a generation id (at most 18 digits)")
                .with_hint("passthru never writes such a generation; move the directory out of " + std::string(k_generations_dir)
                           + " once you know where it came from");
        }
        if (name.size() > 18) {
            continue; // "0...": not ours
        }
        const std::uint64_t id = std::stoull(name);
        if (std::to_string(id) != name) {
            continue; // "007" is not ours
        }
        // Only a directory without a manifest is a transaction's remains: a
        // manifest that is not a regular file, or a directory that cannot be
        // read, is listed, and load() says what is wrong with it.
        if (m_fs.stat(dir(id) + "/manifest.json").type != util::FileType::missing
            || (m_fs.stat(dir(id)).type == util::FileType::directory && !m_fs.list_dir(dir(id)))) {
            out.push_back(id);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::uint64_t Journal::next_id() const
{
    const auto all = ids();
    if (!all.empty() && all.back() >= k_max_generation_id) {
        throw Error(Errc::precondition,
                    "generation " + std::to_string(all.back()) + " is the last id passthru can number (at most 18 digits)")
            .with_hint("nothing was written; the journal in " + std::string(k_generations_dir)
                       + " was renumbered by hand, renumber it back");
    }
    return all.empty() ? 1 : all.back() + 1;
}

Result<Manifest> Journal::load(std::uint64_t id) const
{
    const util::FileType type = m_fs.stat(dir(id) + "/manifest.json").type;
    if (type != util::FileType::regular && type != util::FileType::missing) {
        return tl::unexpected(bad_manifest(id, "manifest.json is not a regular file"));
    }
    auto text = m_fs.read_file(dir(id) + "/manifest.json");
    if (!text) {
        if (text.error().code() == Errc::not_found) {
            return fail(Errc::not_found, "there is no generation " + std::to_string(id));
        }
        return tl::unexpected(text.error());
    }
    auto doc = util::parse_json(*text, "the manifest of generation " + std::to_string(id));
    if (!doc) {
        if (doc.error().code() == Errc::precondition) {
            return tl::unexpected(doc.error());
        }
        return tl::unexpected(bad_manifest(id, "not valid JSON"));
    }
    auto m = manifest_from_json(*doc);
    if (m && m->id != id) {
        return tl::unexpected(bad_manifest(id, "it names itself generation " + std::to_string(m->id)));
    }
    if (m) {
        const util::FileInfo root = m_fs.stat("/");
        if (auto ok = check_manifest(*m, allowed_owners(root.uid, root.gid)); !ok) {
            return tl::unexpected(ok.error());
        }
    }
    return m;
}

std::vector<Manifest> Journal::load_all(std::vector<std::string>* errors) const
{
    std::vector<Manifest> out;
    for (auto id : ids()) {
        auto m = load(id);
        if (m) {
            out.push_back(std::move(*m));
        } else if (errors != nullptr) {
            errors->push_back(m.error().what());
        }
    }
    return out;
}

Result<void> Journal::write_pre_image(std::uint64_t id, std::string_view path, std::string_view content) const
{
    const std::string target = pre_image_path(id, path);
    const std::string parent = util::dir_name(target);
    if (auto r = m_fs.create_directories(parent); !r) {
        return r;
    }
    if (auto r = util::fault::check("journal-pre-image", path); !r) {
        return r;
    }
    if (auto r = m_fs.write_file_atomic(target, content, 0600, util::FsSync::yes); !r) {
        return r;
    }
    // The directories below before/ are new: make their entries durable too.
    for (std::string d = util::dir_name(parent); d.size() >= dir(id).size(); d = util::dir_name(d)) {
        if (auto r = m_fs.sync_directory(d); !r) {
            return r;
        }
        if (d == dir(id)) {
            break;
        }
    }
    return {};
}

Result<void> Journal::write_domain_pre_image(std::uint64_t id, std::string_view name, std::string_view xml) const
{
    const std::string target = domain_pre_image_path(id, name);
    if (auto r = m_fs.create_directories(util::dir_name(target)); !r) {
        return r;
    }
    if (auto r = util::fault::check("journal-pre-image", name); !r) {
        return r;
    }
    if (auto r = m_fs.write_file_atomic(target, xml, 0600, util::FsSync::yes); !r) {
        return r;
    }
    return m_fs.sync_directory(dir(id));
}

Result<std::string> Journal::read_pre_image(std::uint64_t id, std::string_view path) const
{
    return m_fs.read_file(pre_image_path(id, path));
}

Result<std::string> Journal::read_domain_pre_image(std::uint64_t id, std::string_view name) const
{
    return m_fs.read_file(domain_pre_image_path(id, name));
}

Result<void> Journal::save(const Manifest& manifest) const
{
    const std::string gen_dir = dir(manifest.id);
    if (auto r = m_fs.create_directories(gen_dir); !r) {
        return r;
    }
    if (auto r = util::fault::check("journal-manifest", std::string(to_string(manifest.state))); !r) {
        return r;
    }
    const std::string text = to_json(manifest).dump(2) + "\n";
    if (auto r = m_fs.write_file_atomic(gen_dir + "/manifest.json", text, 0600, util::FsSync::yes); !r) {
        return r;
    }
    // The generation's own directory entry, and the state directory's.
    if (auto r = m_fs.sync_directory(k_generations_dir); !r) {
        return r;
    }
    return m_fs.sync_directory(k_state_dir);
}

namespace {

// Removes the directories of `dirs` (parents first) that are empty, deepest
// first; stops at the first one that is not.
void remove_empty_dirs(const util::HostFs& fs, const std::vector<std::string>& dirs)
{
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
        const auto names = fs.list_dir(*it);
        if (!names || !names->empty() || !fs.remove_directory(*it)) {
            return;
        }
    }
}

} // namespace

JournalLock::JournalLock(JournalLock&& other) noexcept
    : m_fs(other.m_fs), m_lock(std::move(other.m_lock)), m_file_created(other.m_file_created),
      m_dirs_created(std::move(other.m_dirs_created))
{
    other.m_fs = nullptr;
    other.m_lock.reset();
}

JournalLock::~JournalLock()
{
    if (m_fs == nullptr) {
        return;
    }
    // The lock file goes while it is still locked: a passthru that opened it
    // just before finds it unlinked after its flock and opens it again
    // (util::HostFs::try_lock), so two never hold "the" lock at once.
    if (m_file_created) {
        (void)m_fs->remove_lock_file(k_lock_path);
    }
    m_lock.reset();
    remove_empty_dirs(*m_fs, m_dirs_created);
}

Result<JournalLock> Journal::lock() const
{
    // The directories of the state directory that do not exist yet, parents first.
    std::vector<std::string> missing;
    for (std::string dir(k_state_dir); dir != "/" && m_fs.stat(dir).type == util::FileType::missing; dir = util::dir_name(dir)) {
        missing.insert(missing.begin(), dir);
    }
    if (auto r = m_fs.create_directories(k_state_dir); !r) {
        return tl::unexpected(r.error());
    }
    const bool file_created = m_fs.stat(k_lock_path).type == util::FileType::missing;
    auto lock = m_fs.try_lock(k_lock_path, util::LockCreate::yes);
    if (!lock) {
        remove_empty_dirs(m_fs, missing);
    }
    if (!lock && lock.error().code() == Errc::conflict) {
        return tl::unexpected(Error(Errc::conflict, "another passthru apply or rollback is running on this host")
                                  .with_hint("wait for it to finish; the lock is " + std::string(k_lock_path)));
    }
    if (!lock) {
        return tl::unexpected(lock.error());
    }
    sweep_remains();
    return JournalLock(m_fs, std::move(*lock), file_created, std::move(missing));
}

namespace {

// A temporary file of HostFs::write_file_atomic (util/temp_name.hpp): ".BASE.passthru-N".
bool looks_like_temp(const std::string& name)
{
    const auto at = name.rfind(".passthru-");
    return name.size() > 1 && name.front() == '.' && at != std::string::npos && at > 1 && util::is_temp_name(name, name.substr(1, at - 1));
}

// Removes dir's regular files (all of them, or with temps_only the temporary
// ones) and, when all is set, its emptied directories, depth first. Symlinks
// are removed as entries, never followed. Best effort: a failure leaves the
// entry for the next sweep.
void sweep_dir(const util::HostFs& fs, const std::string& dir, bool all)
{
    auto names = fs.list_dir(dir);
    if (!names) {
        return;
    }
    for (const auto& name : *names) {
        const std::string path = dir + "/" + name;
        const auto type = fs.stat(path).type;
        if (type == util::FileType::directory) {
            sweep_dir(fs, path, all);
            if (all) {
                (void)fs.remove_directory(path);
            }
        } else if (all || (type == util::FileType::regular && looks_like_temp(name))) {
            (void)fs.remove_file(path);
        }
    }
}

} // namespace

void Journal::sweep_remains() const
{
    auto names = m_fs.list_dir(k_generations_dir);
    if (!names) {
        return;
    }
    for (const auto& name : *names) {
        // appended, not `std::string(...) + "/" + name`: GCC 12 at -O3 takes that for an
        // out-of-bounds copy (-Warray-bounds, a false positive of its string inlining)
        std::string d(k_generations_dir);
        d.append("/").append(name);
        if (name.empty() || name.size() > 18 || name.find_first_not_of("0123456789") != std::string::npos
            || std::to_string(std::stoull(name)) != name || m_fs.stat(d).type != util::FileType::directory) {
            continue; // not a generation passthru numbered
        }
        const auto manifest = m_fs.stat(d + "/manifest.json").type;
        if (manifest == util::FileType::regular) {
            sweep_dir(m_fs, d, false);
        } else if (manifest == util::FileType::missing && m_fs.list_dir(d)) {
            // A transaction that died before its manifest: the host was not
            // touched, and nothing refers to what it left.
            sweep_dir(m_fs, d, true);
            (void)m_fs.remove_directory(d);
        }
    }
}

bool Journal::locked_by_other() const
{
    if (m_fs.stat(k_lock_path).type != util::FileType::regular) {
        return false;
    }
    auto lock = m_fs.try_lock(k_lock_path, util::LockCreate::no);
    return !lock && lock.error().code() == Errc::conflict;
}

} // namespace passthru::apply
