// SPDX-License-Identifier: GPL-2.0-or-later
// The journal: numbered generations under <root>/var/lib/passthru, one per
// transaction that changed the host (an apply or a rollback). A generation
// holds the pre-image of every file it touches and a manifest; both are on
// disk (fsynced) before the first host file is touched, so an interrupted
// transaction can always be undone byte for byte.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/after_step.hpp"
#include "plan/plan.hpp"
#include "util/error.hpp"
#include "util/host_fs.hpp"

namespace passthru::apply {

inline constexpr std::string_view k_state_dir = "/var/lib/passthru";
inline constexpr std::string_view k_lock_path = "/var/lib/passthru/lock";
inline constexpr std::string_view k_generations_dir = "/var/lib/passthru/generations";
// Manifests are written as passthru.generation/2 (file actions in the plan's
// words). passthru.generation/1, whose file action for a deleted file was
// "remove", is still read, so journals written before keep rolling back.
// Generation ids have at most 18 digits (they fit a signed 64-bit integer,
// as JSON readers take them); an id above is refused, never written.
inline constexpr std::uint64_t k_max_generation_id = 999'999'999'999'999'999;
inline constexpr std::string_view k_manifest_schema = "passthru.generation/2";
inline constexpr std::string_view k_manifest_schema_v1 = "passthru.generation/1";

enum class GenerationKind
{
    apply,    // made by `passthru apply`
    rollback, // made by `passthru rollback`: undoes earlier generations
};

enum class GenerationState
{
    pending,        // written ahead; the host may be half-changed (interrupted if nobody holds the lock)
    committed,      // every file written and every after-step succeeded
    rolled_back,    // failed or interrupted, and every file was restored
    restore_failed, // failed, and restoring did not succeed: manual attention needed
};

// The file-change vocabulary is the plan's (create, modify, delete).
using plan::FileAction;

// One host file the generation touches.
struct JournalFile
{
    std::string path;
    FileAction action = FileAction::modify;
    std::optional<std::string> before_sha256; // nullopt: the file did not exist
    std::optional<std::string> after_sha256;  // nullopt: the file is removed
    mode_t mode = 0644;                       // of the file before (or of the created file)
    uid_t uid = 0;
    gid_t gid = 0;
};

// A resource an after-step allocated (found after it ran), e.g. the EFI
// vars volume of `qm set N --efidisk0 ...`.
struct JournalResource
{
    std::string kind;       // "volume"
    std::string id;         // the volume ID ("local:101/vm-101-disk-0.raw")
    std::string vm;         // the VMID it belongs to
    std::string config_key; // the VM config key that named it ("efidisk0")
};

// Where an after-step got to.
enum class CommandStatus
{
    planned,  // not run (yet)
    recorded, // written to the command log instead of run (under --root)
    ran,      // ran and succeeded
    failed,   // ran and failed
};

std::string_view to_string(CommandStatus status);
// nullopt for any other word.
std::optional<CommandStatus> command_status_from(std::string_view word);

// One after-step (update-initramfs, proxmox-boot-tool refresh, ...), with
// what it changes and how it is undone (plan/after_step.hpp).
struct JournalCommand
{
    std::vector<std::string> argv;
    std::string reason;
    CommandStatus status = CommandStatus::planned;
    std::optional<int> exit_code;
    plan::StepUndo undo = plan::StepUndo::manual;
    std::vector<std::string> edits;       // journaled files it rewrites
    std::vector<JournalResource> created; // what it allocated (status ran)
    std::vector<std::string> manual_undo; // undo == manual: the commands to run by hand
    std::vector<std::string> output;      // status failed: the last lines it printed
};

// A journal command for argv with its effects from plan/after_step's table.
JournalCommand journal_command(const std::vector<std::string>& argv, std::string reason);

// A libvirt domain definition the generation changes (libvirt backend).
struct JournalDomain
{
    std::string uri;
    std::string name;
    bool had_before = false; // pre-image stored as domains/<name>.xml
    std::string after_sha256;
};

struct Manifest
{
    std::uint64_t id = 0;
    GenerationKind kind = GenerationKind::apply;
    GenerationState state = GenerationState::pending;
    std::string created;  // UTC, ISO 8601
    std::string finished; // empty while pending
    std::string version = PASSTHRU_VERSION;
    // The "request" member: apply, the passthru.plan/1 request; rollback,
    // {"rollback_to_before": N}; null (neither) for a spec without one.
    std::optional<plan::Request> request;
    std::optional<std::uint64_t> rollback_to_before;
    std::vector<plan::SelectedGpu> gpus;   // apply: the selected cards (what verify checks)
    std::vector<std::string> kernel_args;  // apply: arguments the plan added to the command line
    std::vector<std::uint64_t> undoes;     // rollback: the generations it undid
    std::vector<JournalFile> files;        // in the order they are written
    std::vector<std::string> created_dirs; // directories made for new files, parents first
    std::vector<JournalCommand> commands;  // after-steps, in order
    bool commands_started = false;         // saved before the first after-step runs
    std::vector<JournalDomain> domains;
    std::string error;                     // what went wrong (failed generations)
    std::vector<std::string> manual_steps; // restore_failed: what to do by hand
};

std::string_view to_string(GenerationKind kind);
std::string_view to_string(GenerationState state);

nlohmann::json to_json(const Manifest& manifest);
// Errc::parse when the document is not a passthru.generation/2 (or /1) manifest.
Result<Manifest> manifest_from_json(const nlohmann::json& doc);

// Current UTC time as "2025-01-31T12:34:56Z".
std::string utc_now();

// The journal's lock, held while it lives. What taking it created (the lock
// file, and the state directory with its missing parents) goes again when it
// is released: the lock file always (a later passthru creates it anew), a
// directory when it is empty. So a command refused under the lock (exit 3)
// leaves the tree as it found it.
class JournalLock
{
public:
    JournalLock(const JournalLock&) = delete;
    JournalLock& operator=(const JournalLock&) = delete;
    JournalLock(JournalLock&& other) noexcept;
    JournalLock& operator=(JournalLock&&) = delete;
    ~JournalLock();

private:
    friend class Journal;
    JournalLock(const util::HostFs& fs, util::HostLock lock, bool file_created, std::vector<std::string> dirs_created)
        : m_fs(&fs), m_lock(std::move(lock)), m_file_created(file_created), m_dirs_created(std::move(dirs_created))
    {}
    const util::HostFs* m_fs; // nullptr once moved from
    std::optional<util::HostLock> m_lock;
    bool m_file_created = false;
    std::vector<std::string> m_dirs_created; // parents first
};

// Access to the generations of one host root. Reads go through HostFs;
// every write is atomic and fsynced.
class Journal
{
public:
    explicit Journal(const util::HostFs& fs) : m_fs(fs) {}

    // Numbers of the generation directories that hold a manifest, ascending.
    // A directory without a manifest is the remains of a transaction that
    // died before it wrote its manifest (the host was not touched yet); it
    // is ignored and its number is reused. A manifest that is not a regular
    // file, or a generation directory that cannot be read, is listed (load()
    // refuses it), and a generations directory that cannot be read throws:
    // no generation is ever hidden: a directory named by more digits than
    // a generation id has (k_max_generation_id) throws (Errc::precondition).
    std::vector<std::uint64_t> ids() const;
    Result<Manifest> load(std::uint64_t id) const;
    // Every readable manifest, ascending; unreadable ones are reported in errors.
    std::vector<Manifest> load_all(std::vector<std::string>* errors = nullptr) const;
    // Highest existing number + 1 (1 for the first); throws
    // (Errc::precondition) when that would be above k_max_generation_id.
    std::uint64_t next_id() const;

    // Host path of generation id's directory ("/var/lib/passthru/generations/0007").
    static std::string dir(std::uint64_t id);
    // Host path where the pre-image of host file `path` is stored.
    static std::string pre_image_path(std::uint64_t id, std::string_view path);
    // Host path where recovery keeps a file changed after the crash before
    // it restores it (rollback --force).
    static std::string kept_path(std::uint64_t id, std::string_view path);
    static std::string domain_pre_image_path(std::uint64_t id, std::string_view name);

    // Stores the pre-image of a file (atomic, fsynced; its directories too).
    Result<void> write_pre_image(std::uint64_t id, std::string_view path, std::string_view content) const;
    Result<void> write_domain_pre_image(std::uint64_t id, std::string_view name, std::string_view xml) const;
    Result<std::string> read_pre_image(std::uint64_t id, std::string_view path) const;
    Result<std::string> read_domain_pre_image(std::uint64_t id, std::string_view name) const;
    // Writes manifest.json atomically and fsyncs it and the generations
    // directory, so the generation is durable when this returns.
    Result<void> save(const Manifest& manifest) const;

    // Creates the state directory and takes the lock without waiting
    // (Errc::conflict when another passthru holds it). Holding it, sweeps
    // what killed writes left in the journal (sweep_remains).
    Result<JournalLock> lock() const;
    // True when another process holds the lock right now. Never creates anything.
    bool locked_by_other() const;

    const util::HostFs& fs() const noexcept { return m_fs; }

private:
    // Under the lock: removes the temporary files a kill left inside a
    // generation's directory (a manifest or pre-image write cut before its
    // rename), and the whole directory of a transaction that died before its
    // manifest, whose number is reused.
    void sweep_remains() const;

    const util::HostFs& m_fs;
};

} // namespace passthru::apply
