// SPDX-License-Identifier: GPL-2.0-or-later
#include "cli/help.hpp"

#include <sstream>

namespace passthru::cli {

namespace {

constexpr const char* k_exit_codes =
    "Exit codes:\n"
    "  0   success, or nothing to do\n"
    "  1   error; the host is unchanged or was rolled back\n"
    "  2   usage error or bad input\n"
    "  3   refused: the host or request is unsafe (nothing was changed)\n"
    "  4   rollback failed: manual attention needed (the affected paths are listed)\n"
    "  10  changes are pending (with --exit-code)\n"
    "  70  internal error\n";

} // namespace

std::string main_help(const po::options_description& global)
{
    std::ostringstream out;
    out << "usage: passthru [--root DIR] COMMAND [OPTIONS]\n\n"
           "Takes a Proxmox VE host with NVIDIA GPUs to working VFIO passthrough: scan, plan,\n"
           "apply (journaled, reversible), reboot, verify.\n\n"
           "Commands:\n";
    for (const auto& c : commands()) {
        out << "  " << c.name << std::string(10 - c.name.size(), ' ') << c.summary << '\n';
    }
    out << '\n' << global << '\n' << k_exit_codes;
    out << "\nRun 'passthru COMMAND --help' for a command's options; 'man passthru' for the whole story.\n";
    return out.str();
}

std::string command_help(const Command& command, const po::options_description& options, const po::options_description& global)
{
    std::ostringstream out;
    out << "usage: passthru [--root DIR] " << command.name << " [OPTIONS]\n\n" << command.summary << "\n\n"
        << options << '\n' << global << '\n' << k_exit_codes;
    return out.str();
}

} // namespace passthru::cli
