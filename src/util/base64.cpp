// SPDX-License-Identifier: GPL-2.0-or-later
// OpenSSL's block codec (EVP_EncodeBlock / EVP_DecodeBlock), the library passthru already
// links for sha256; the canonical form is enforced here, since EVP_DecodeBlock skips
// surrounding white space and counts the padding as bytes.
#include "util/base64.hpp"

#include <openssl/evp.h>

#include <limits>

namespace passthru::util {

std::string base64_encode(std::string_view bytes)
{
    // The callers' bytes are bounded (a ROM image: 16 MiB, plan/vm/proxmox_rom.cpp), far
    // below what an int counts.
    std::string out((bytes.size() + 2) / 3 * 4 + 1, '\0'); // EVP_EncodeBlock writes a NUL after the text
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                                  static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::optional<std::string> base64_decode(std::string_view text)
{
    if (text.size() % 4 != 0 || text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        return std::nullopt;
    }
    std::string out(text.size() / 4 * 3, '\0');
    const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size()));
    if (n < 0) {
        return std::nullopt;
    }
    std::size_t pad = 0;
    while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') {
        ++pad;
    }
    out.resize(static_cast<std::size_t>(n) - pad);
    // One text per value: only what encoding the bytes gives back (no white space, padding
    // only at the end, unused bits zero) is taken.
    if (base64_encode(out) != text) {
        return std::nullopt;
    }
    return out;
}

} // namespace passthru::util
