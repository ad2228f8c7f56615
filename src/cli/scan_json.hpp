// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include "scan/inventory.hpp"

namespace passthru::cli {

// The documented scan document, schema "passthru.scan/1" (docs/scan-json.md).
nlohmann::json scan_to_json(const scan::Inventory& inv);
// The same document written piece by piece (one device at a time), so a host
// with ten thousand functions needs no JSON tree in memory.
void write_scan_json(std::FILE* out, const scan::Inventory& inv);

} // namespace passthru::cli
