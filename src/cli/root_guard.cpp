// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/root_guard.hpp"

#include <filesystem>

#include "util/command_runner.hpp"
#include "util/error.hpp"

namespace passthru::cli {

std::optional<std::string> unwritable_root(const Context& ctx)
{
    if (ctx.fs.is_live()) {
        return std::nullopt;
    }
    // The root as HostFs resolved it (canonical), against the data directory as installed.
    const std::filesystem::path& root = ctx.fs.root();
    const auto rel = root.lexically_relative(PASSTHRU_INSTALLED_DATA_DIR);
    if (!rel.empty() && *rel.begin() != "..") {
        return root.string() + " belongs to the installed package (under " + std::string(PASSTHRU_INSTALLED_DATA_DIR)
               + "), which passthru does not change";
    }
    if (auto denied = ctx.fs.write_denied({"etc", "var"})) {
        return denied;
    }
    return std::nullopt;
}

std::string copy_root_hint(const Context& ctx)
{
    const std::string copy = "/tmp/" + ctx.fs.root().filename().string();
    return "copy it somewhere writable first: cp -a " + util::shell_quote({ctx.fs.root().string()}) + " " + util::shell_quote({copy})
           + ", then give --root " + util::shell_quote({copy});
}

void require_writable_root(const Context& ctx, std::string_view command)
{
    if (auto why = unwritable_root(ctx)) {
        throw Error(Errc::usage, "'passthru " + std::string(command) + "' writes under --root, and " + *why).with_hint(copy_root_hint(ctx));
    }
}

} // namespace passthru::cli
