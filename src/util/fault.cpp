// SPDX-License-Identifier: GPL-2.0-or-later
#include "util/fault.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace passthru::util::fault {

#ifdef PASSTHRU_FAULT_HOOK
namespace {

struct Spec
{
    std::string action; // kill | fail | enospc
    std::string point;  // empty = any point
    long nth = 0;
};

Spec parse_spec()
{
    Spec spec;
    const char* env = std::getenv("PASSTHRU_TEST_FAULT");
    if (env == nullptr) {
        return spec;
    }
    const std::string text(env);
    const auto at = text.find('@');
    if (at == std::string::npos) {
        return spec;
    }
    spec.action = text.substr(0, at);
    std::string rest = text.substr(at + 1);
    if (const auto colon = rest.find(':'); colon != std::string::npos) {
        spec.point = rest.substr(0, colon);
        rest = rest.substr(colon + 1);
    }
    spec.nth = std::strtol(rest.c_str(), nullptr, 10);
    return spec;
}

} // namespace

Result<void> check(std::string_view point, std::string_view detail)
{
    static const Spec spec = parse_spec();
    static const bool trace = std::getenv("PASSTHRU_TEST_FAULT_TRACE") != nullptr;
    static long seen_all = 0;
    static long seen_matching = 0;
    ++seen_all;
    if (trace) {
        std::fprintf(stderr, "fault-point %ld %.*s %.*s\n", seen_all, static_cast<int>(point.size()), point.data(),
                     static_cast<int>(detail.size()), detail.data());
    }
    if (spec.nth <= 0) {
        return {};
    }
    if (!spec.point.empty() && spec.point != point) {
        return {};
    }
    if (++seen_matching != spec.nth) {
        return {};
    }
    if (spec.action == "kill") {
        std::fflush(nullptr);
        std::raise(SIGKILL);
    }
    if (spec.action == "enospc") {
        return fail(Errc::io, "cannot write " + std::string(detail) + ": No space left on device (injected)");
    }
    return fail(Errc::io, "injected failure at " + std::string(point) + " " + std::string(detail));
}
#else
Result<void> check(std::string_view, std::string_view)
{
    return {};
}
#endif

} // namespace passthru::util::fault
