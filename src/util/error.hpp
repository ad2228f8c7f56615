// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <tl/expected.hpp>

namespace passthru {

// What went wrong, coarse enough to pick an exit code (see exit_code()).
enum class Errc
{
    io,              // reading or writing the host failed
    parse,           // a file or value could not be understood
    not_found,       // a path, device or VM that must exist does not
    usage,           // bad command-line input
    precondition,    // refused: the host or request is unsafe (fail closed)
    conflict,        // another passthru runs, or a file changed since planning
    rollback_failed, // a restore failed: manual attention needed
    internal,        // a bug
};

// The one error type. Messages are lower-case, name the object, and carry no
// trailing period; hints say what to do instead.
class Error : public std::runtime_error
{
public:
    Error(Errc code, const std::string& message) : std::runtime_error(message), m_code(code) {}

    Errc code() const noexcept { return m_code; }
    const std::vector<std::string>& hints() const noexcept { return m_hints; }
    const std::vector<std::string>& context() const noexcept { return m_context; }

    Error&& with_hint(std::string hint) &&
    {
        m_hints.push_back(std::move(hint));
        return std::move(*this);
    }
    Error& with_hint(std::string hint) &
    {
        m_hints.push_back(std::move(hint));
        return *this;
    }
    // "while planning VM 101": innermost first.
    Error&& with_context(std::string what) &&
    {
        m_context.push_back(std::move(what));
        return std::move(*this);
    }

private:
    Errc m_code;
    std::vector<std::string> m_hints;
    std::vector<std::string> m_context;
};

template<typename T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(Errc code, const std::string& message)
{
    return tl::unexpected<Error>(Error(code, message));
}

// Error forwarding for functions that return a Result. PASSTHRU_TRY(EXPR):
// when the Result EXPR holds an error, the calling function returns it.
// PASSTHRU_TRY_ASSIGN(TARGET, EXPR): the same, and otherwise TARGET, an
// existing variable or a declaration ("const auto cards"), takes EXPR's
// value. Each is a statement of its own (not the body of a braceless if).
#define PASSTHRU_TRY(...)                                                                                                                  \
    do {                                                                                                                                   \
        if (auto passthru_try_result_ = (__VA_ARGS__); !passthru_try_result_) {                                                            \
            return tl::unexpected<::passthru::Error>(std::move(passthru_try_result_).error());                                             \
        }                                                                                                                                  \
    } while (false)

#define PASSTHRU_TRY_CONCAT_(a, b) a##b
#define PASSTHRU_TRY_NAME_(line) PASSTHRU_TRY_CONCAT_(passthru_try_result_, line)
#define PASSTHRU_TRY_ASSIGN_(result, target, ...)                                                                                          \
    auto result = (__VA_ARGS__);                                                                                                           \
    if (!(result)) {                                                                                                                       \
        return tl::unexpected<::passthru::Error>(std::move(result).error());                                                               \
    }                                                                                                                                      \
    target = std::move(*(result)) // NOLINT(bugprone-macro-parentheses): TARGET may be a declaration
#define PASSTHRU_TRY_ASSIGN(target, ...) PASSTHRU_TRY_ASSIGN_(PASSTHRU_TRY_NAME_(__LINE__), target, __VA_ARGS__)

// Documented exit codes (README, man page, --help).
namespace exit_code {
inline constexpr int ok = 0;
inline constexpr int error = 1;
inline constexpr int usage = 2;
inline constexpr int refused = 3;
inline constexpr int rollback_failed = 4;
inline constexpr int pending = 10;
inline constexpr int kernel_breaks = 11;
inline constexpr int internal = 70;
} // namespace exit_code

inline int exit_code_for(Errc code)
{
    switch (code) {
    case Errc::usage:
        return exit_code::usage;
    case Errc::precondition:
        return exit_code::refused;
    case Errc::rollback_failed:
        return exit_code::rollback_failed;
    case Errc::internal:
        return exit_code::internal;
    case Errc::io:
    case Errc::parse:
    case Errc::not_found:
    case Errc::conflict:
        return exit_code::error;
    }
    return exit_code::internal;
}

} // namespace passthru
