// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <nlohmann/json.hpp>

#include "scan/inventory.hpp"

namespace passthru::cli {

// The documented scan document, schema "passthru.scan/1" (docs/scan-json.md).
nlohmann::json scan_to_json(const scan::Inventory& inv);

} // namespace passthru::cli
