// SPDX-License-Identifier: GPL-2.0-or-later
#include "data/schema.hpp"

#include <algorithm>
#include <limits>

#include "util/strings.hpp"

namespace passthru::data {

namespace {

const nlohmann::json k_null_value;

bool listed(std::span<const std::string_view> names, std::string_view key)
{
    return std::find(names.begin(), names.end(), key) != names.end();
}

} // namespace

const nlohmann::json& Field::json() const noexcept
{
    return value_ != nullptr ? *value_ : k_null_value;
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
    if (value_ == nullptr || !value_->is_string()) {
        expected("a string");
    }
    return value_->get<std::string>();
}

std::string Field::nonempty_string() const
{
    auto text = value_ != nullptr && value_->is_string() ? value_->get<std::string>() : std::string();
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
    if (value_ == nullptr || !value_->is_boolean()) {
        expected("true or false");
    }
    return value_->get<bool>();
}

std::int64_t Field::integer() const
{
    if (value_ == nullptr || !value_->is_number_integer()
        || (value_->is_number_unsigned() && value_->get<std::uint64_t>() > std::uint64_t{std::numeric_limits<std::int64_t>::max()})) {
        expected("an integer");
    }
    return value_->get<std::int64_t>();
}

double Field::number() const
{
    if (value_ == nullptr || !value_->is_number()) {
        expected("a number");
    }
    return value_->get<double>();
}

std::size_t Field::size() const
{
    if (value_ == nullptr || !value_->is_array()) {
        expected("an array");
    }
    return value_->size();
}

void Field::object() const
{
    if (value_ == nullptr || !value_->is_object()) {
        expected("an object");
    }
}

void Field::only_fields(std::span<const std::string_view> allowed, std::string_view of, std::span<const std::string_view> ignored) const
{
    object();
    for (const auto& item : value_->items()) {
        if (!listed(allowed, item.key()) && !listed(ignored, item.key())) {
            throw SchemaError{child(item.key()) + " is not a field of " + std::string(of)};
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
    if (!doc.json().is_object()) {
        throw SchemaError(doc.path() + " must be a JSON object");
    }
    if (!doc.has("schema") || doc["schema"].json() != schema) {
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
