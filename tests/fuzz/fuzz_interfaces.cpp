// SPDX-License-Identifier: GPL-2.0-or-later
// /etc/network/interfaces (ifupdown2's interfaces(5)): parsing never fails,
// the text comes back byte for byte, and an edit of every stanza keeps the
// file parseable with the edit in it.
#include "format/interfaces.hpp"
#include "fuzz.hpp"

using namespace passthru;
using format::InterfacesFile;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto text = fuzz::text_of(data, size);
    auto file = InterfacesFile::parse(text);
    fuzz::require(file.text() == text, "InterfacesFile::parse(text).text() == text");
    (void)file.stray_lines();
    const auto stanzas = file.stanzas();
    for (const auto& stanza : stanzas) {
        file.set_option(stanza.name, stanza.family, "mtu", "9000");
    }
    const auto edited = InterfacesFile::parse(file.text());
    fuzz::require(edited.text() == file.text(), "an edited file reparses to itself");
    return 0;
}
