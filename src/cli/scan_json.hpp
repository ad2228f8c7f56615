// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "scan/inventory.hpp"

namespace passthru::cli {

// The documented scan document, schema "passthru.scan/1" (docs/scan-json.md).
nlohmann::json scan_to_json(const scan::Inventory& inv);
// The same document written piece by piece (one device at a time), so a host
// with ten thousand functions needs no JSON tree in memory.
void write_scan_json(std::FILE* out, const scan::Inventory& inv);
// One device of that document: its JSON value, and the same value as text
// (what dump(2) prints for it nested `level` deep), written without a tree.
nlohmann::json device_to_json(const scan::PciDevice& d);
void append_device_json(std::string& out, const scan::PciDevice& d, int level);

} // namespace passthru::cli
