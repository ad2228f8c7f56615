// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/schema.hpp"

#include <algorithm>
#include <limits>

#include "util/strings.hpp"

namespace passthru::data {

namespace {

bool listed(std::span<const std::string_view> names, std::string_view key)
{
    return std::find(names.begin(), names.end(), key) != names.end();
}

} // namespace

bool Field::is_null() const noexcept
{
    return value_ != nullptr && value_->is_null();
}

bool Field::is_string() const noexcept
{
    return value_ != nullptr && value_->is_string();
}

bool Field::is_boolean() const noexcept
{
    return value_ != nullptr && value_->is_boolean();
}

bool Field::is_integer() const noexcept
{
    return value_ != nullptr && value_->is_number_integer()
           && !(value_->is_number_unsigned() && value_->get<std::uint64_t>() > std::uint64_t{std::numeric_limits<std::int64_t>::max()});
}

bool Field::is_number() const noexcept
{
    return value_ != nullptr && value_->is_number();
}

bool Field::is_array() const noexcept
{
    return value_ != nullptr && value_->is_array();
}

bool Field::is_object() const noexcept
{
    return value_ != nullptr && value_->is_object();
}

std::optional<std::string> Field::if_string() const
{
    return is_string() ? std::optional<std::string>(value_->get<std::string>()) : std::nullopt;
}

std::optional<std::int64_t> Field::if_integer() const
{
    return is_integer() ? std::optional<std::int64_t>(value_->get<std::int64_t>()) : std::nullopt;
}

std::optional<double> Field::if_number() const
{
    return is_number() ? std::optional<double>(value_->get<double>()) : std::nullopt;
}

std::string Field::child(std::string_view key) const
{
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool Field::has(std::string_view key) const
{
    return value_ != nullptr && value_->is_object() && value_->contains(key);
}

Field Field::operator[](std::string_view key) const
{
    if (value_ == nullptr || !value_->is_object()) {
        return {nullptr, child(key)};
    }
    const auto it = value_->find(key);
    return {it == value_->end() ? nullptr : &*it, child(key)};
}

Field Field::operator[](std::size_t i) const
{
    const std::string at = path_ + "[" + std::to_string(i) + "]";
    if (value_ == nullptr || !value_->is_array() || i >= value_->size()) {
        return {nullptr, at};
    }
    return {&(*value_)[i], at};
}

void Field::fail(const std::string& what) const
{
    throw SchemaError{path() + " " + what};
}

void Field::expected(const std::string& what) const
{
    if (value_ == nullptr) {
        fail("is missing");
    }
    throw SchemaError{path() + ": expected " + what};
}

std::string Field::string() const
{
    if (!is_string()) {
        expected("a string");
    }
    return value_->get<std::string>();
}

std::string Field::nonempty_string() const
{
    auto text = if_string().value_or("");
    if (text.empty()) {
        expected("a non-empty string");
    }
    return text;
}

std::string Field::one_line() const
{
    auto text = nonempty_string();
    if (!util::one_line(text)) {
        throw SchemaError(path() + " must be one line of text: no line break or other control character", true,
                          "fix the data file (or remove the override under /etc/passthru) and run again");
    }
    return text;
}

bool Field::boolean() const
{
    if (!is_boolean()) {
        expected("true or false");
    }
    return value_->get<bool>();
}

std::int64_t Field::integer() const
{
    if (!is_integer()) {
        expected("an integer");
    }
    return value_->get<std::int64_t>();
}

double Field::number() const
{
    if (!is_number()) {
        expected("a number");
    }
    return value_->get<double>();
}

std::size_t Field::size() const
{
    if (!is_array()) {
        expected("an array");
    }
    return value_->size();
}

void Field::object() const
{
    if (!is_object()) {
        expected("an object");
    }
}

std::vector<Field> Field::elements() const
{
    std::vector<Field> out;
    out.reserve(size());
    for (std::size_t i = 0; i < value_->size(); ++i) {
        out.push_back((*this)[i]);
    }
    return out;
}

std::vector<std::string> Field::keys() const
{
    object();
    std::vector<std::string> out;
    out.reserve(value_->size());
    for (const auto& item : value_->items()) {
        out.push_back(item.key());
    }
    return out;
}

void Field::only_fields(std::span<const std::string_view> allowed, std::string_view of, std::span<const std::string_view> ignored) const
{
    for (const auto& key : keys()) {
        if (!listed(allowed, key) && !listed(ignored, key)) {
            throw SchemaError{child(key) + " is not a field of " + std::string(of)};
        }
    }
}

bool vendor_device_id(std::string_view text)
{
    const auto hex4 = [&](std::size_t at) { return text.substr(at, 4).find_first_not_of("0123456789abcdef") == std::string_view::npos; };
    return text.size() == 9 && text[4] == ':' && hex4(0) && hex4(5);
}

void check_schema(const Field& doc, std::string_view schema)
{
    if (!doc.is_object()) {
        throw SchemaError(doc.path() + " must be a JSON object");
    }
    if (doc["schema"].if_string() != schema) {
        throw SchemaError{"schema must be \"" + std::string(schema) + "\""};
    }
}

Error schema_error(const std::string& where, const SchemaError& e)
{
    if (e.refused) {
        Error error(Errc::precondition, "refused: " + where + ": " + e.message);
        if (!e.hint.empty()) {
            error.with_hint(e.hint);
        }
        return error;
    }
    return Error(Errc::usage, where + ": " + e.message);
}

} // namespace passthru::data
