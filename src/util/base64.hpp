// SPDX-License-Identifier: GPL-2.0-or-later
// Base64 (RFC 4648, the standard alphabet, padded): how a plan's JSON carries the
// bytes of a binary file (a ROM image), which a JSON string cannot hold raw.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace passthru::util {

std::string base64_encode(std::string_view bytes);
// The bytes, or nullopt for anything but canonical padded base64 (no spaces, no
// line breaks, the padding only at the end, unused bits zero): one text per value.
std::optional<std::string> base64_decode(std::string_view text);

} // namespace passthru::util
