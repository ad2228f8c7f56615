// SPDX-License-Identifier: GPL-2.0-or-later
// The one check the data-file tests make of a document that breaks its schema:
// the loader refused it as a usage error (exit 2); its message is returned for
// the test to compare.
#pragma once

#include <string>

#include <doctest/doctest.h>

#include "util/error.hpp"

namespace passthru::test {

template<class T>
std::string usage_error(const Result<T>& parsed)
{
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code() == Errc::usage);
    return parsed.error().what();
}

} // namespace passthru::test
