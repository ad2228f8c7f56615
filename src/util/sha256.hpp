// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <string>
#include <string_view>

namespace passthru::util {

// Lower-case hex SHA-256 of the bytes (OpenSSL's EVP interface).
std::string sha256_hex(std::string_view data);

} // namespace passthru::util
