// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace passthru::test {

// A fresh directory under $TMPDIR, removed with everything in it at the end.
class TempDir
{
public:
    TempDir()
    {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base != nullptr ? base : "/tmp") + "/passthru-unit-XXXXXX";
        char* made = ::mkdtemp(tmpl.data());
        m_path = made != nullptr ? std::filesystem::path(made) : std::filesystem::path();
    }
    ~TempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return m_path; }

    // Writes a file at a path relative to the directory, creating parents.
    void write(std::string_view rel, std::string_view content) const
    {
        const auto p = m_path / rel;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << content;
    }
    void symlink(std::string_view rel, std::string_view target) const
    {
        const auto p = m_path / rel;
        std::filesystem::create_directories(p.parent_path());
        std::filesystem::create_directory_symlink(std::string(target), p);
    }
    std::string read(std::string_view rel) const
    {
        std::ifstream in(m_path / rel, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

private:
    std::filesystem::path m_path;
};

// Copies a fixture host tree (symlinks kept as links) into a TempDir.
inline void copy_tree(const std::filesystem::path& from, const std::filesystem::path& to)
{
    std::filesystem::copy(from, to,
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks
                              | std::filesystem::copy_options::overwrite_existing);
}

} // namespace passthru::test
