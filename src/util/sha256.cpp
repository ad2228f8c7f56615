// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/sha256.hpp"

#include <openssl/evp.h>

#include "util/strings.hpp"

namespace passthru::util {

std::string sha256_hex(std::string_view data)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
    std::string out;
    out.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) {
        out += hex(digest[i], 2);
    }
    return out;
}

} // namespace passthru::util
