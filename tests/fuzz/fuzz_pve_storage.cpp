// SPDX-License-Identifier: GPL-2.0-or-later
// Proxmox VE's storage.cfg: any text gives an answer or none, never a crash;
// an answer is a storage id of the file (a word of it without blanks).
#include "format/pve_storage.hpp"
#include "fuzz.hpp"

using namespace passthru;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    if (const auto id = format::pve::first_images_storage(text)) {
        fuzz::require(!id->empty() && text.find(*id) != std::string_view::npos, "the storage id is a word of the file");
        fuzz::require(id->find_first_of(" \t\r\n") == std::string::npos, "the storage id has no blanks");
    }
    return 0;
}
