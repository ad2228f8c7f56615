// SPDX-License-Identifier: GPL-2.0-or-later
// passthru rom dump SLOT FILE: one card's option ROM read through sysfs, checked as a
// PCI option ROM for that card, and saved to FILE on this machine only when it passes
// (apply/rom_dump.*, format/pci_rom.*; docs/facts.md: rom-files).
#include <cstdio>

#include "apply/rom_dump.hpp"
#include "cli/apply_common.hpp"
#include "cli/commands.hpp"
#include "data/data_dir.hpp"
#include "plan/planner.hpp"
#include "util/host_fs.hpp"
#include "util/local_file.hpp"

namespace passthru::cli {

void rom_options(po::options_description& options)
{
    options.add_options()("force", "replace FILE when it exists");
}

int run_rom(Context& ctx, const po::variables_map& vm)
{
    const auto words = vm.count(k_operand_key) != 0U ? vm[k_operand_key].as<std::vector<std::string>>() : std::vector<std::string>{};
    if (words.size() != 3 || words[0] != "dump") {
        throw Error(Errc::usage, "rom needs what to do, the card and the file: passthru rom dump SLOT FILE");
    }
    const std::string& file = words[2];
    if (file.empty() || file == "-") {
        throw Error(Errc::usage, "rom dump needs a file name, not '" + file + "'");
    }
    if (vm.count("force") == 0U && util::local_entry_exists(file)) {
        throw Error(Errc::precondition, "refused: " + file + " exists; rom dump does not replace it")
            .with_hint("add --force to replace it");
    }
    const data::DataDir data(ctx.fs, ctx.global.data_dir);
    const scan::Inventory inventory = scan_with_data(ctx, data);
    auto cards = plan::select_cards(inventory, words[1]);
    if (!cards) {
        throw cards.error();
    }
    if (cards->size() != 1) {
        throw Error(Errc::usage, "rom dump reads one card, and '" + words[1] + "' names " + std::to_string(cards->size()));
    }
    const auto dump = apply::dump_rom(ctx.fs, inventory, *cards->front());
    if (!dump.verdict.ok()) {
        throw Error(Errc::parse, "rom dump: the ROM read from " + dump.function + " is not a usable option ROM: " + dump.verdict.detail
                                     + " (" + file + " not written)")
            .with_hint("take the ROM file from the card maker's firmware update instead");
    }
    if (auto saved = util::save_local_file(file, dump.bytes, 0644); !saved) {
        throw Error(saved.error().code(), "rom dump: " + std::string(saved.error().what()));
    }
    std::printf("%s: %zu bytes, %s\nwrote %s\n", dump.function.c_str(), dump.bytes.size(), dump.verdict.summary().c_str(), file.c_str());
    return exit_code::ok;
}

} // namespace passthru::cli
