// SPDX-License-Identifier: GPL-2.0-or-later
// Proxmox VE's storage configuration /etc/pve/storage.cfg (a pve-common
// SectionConfig: "TYPE: ID" headers, indented "KEY VALUE" properties, a blank
// line between sections; docs/facts.md: vm-config, EFI disk). passthru only reads it, to
// find where a new VM's EFI disk can go.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace passthru::format::pve {

// The ID of the first storage whose "content" list has "images", if any.
std::optional<std::string> first_images_storage(std::string_view text);

} // namespace passthru::format::pve
