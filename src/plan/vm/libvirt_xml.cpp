// SPDX-License-Identifier: GPL-2.0-or-later
// Domain XML edits with libxml2 (the parser libvirt itself uses). The
// document is written back in libvirt's own style (single-quoted
// attributes, white space kept) so the plan's diff shows only what changed.
#include "plan/vm/libvirt_xml.hpp"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "util/strings.hpp"

namespace passthru::plan {

namespace {

struct DocDeleter
{
    void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};
using DocPtr = std::unique_ptr<xmlDoc, DocDeleter>;

std::string name_of(const xmlNode* node)
{
    return node->name != nullptr ? reinterpret_cast<const char*>(node->name) : "";
}

bool is_element(const xmlNode* node, std::string_view name)
{
    return node != nullptr && node->type == XML_ELEMENT_NODE && name_of(node) == name;
}

std::optional<std::string> attr(const xmlNode* node, const char* name)
{
    xmlChar* value = xmlGetProp(node, reinterpret_cast<const xmlChar*>(name));
    if (value == nullptr) {
        return std::nullopt;
    }
    std::string out(reinterpret_cast<const char*>(value));
    xmlFree(value);
    return out;
}

std::optional<unsigned long> attr_number(const xmlNode* node, const char* name)
{
    const auto text = attr(node, name);
    if (!text || text->empty()) {
        return std::nullopt;
    }
    char* end = nullptr;
    const unsigned long value = std::strtoul(text->c_str(), &end, 0); // "0x01" or "1", as libvirt accepts
    if (end == nullptr || *end != '\0') {
        return std::nullopt;
    }
    return value;
}

std::vector<xmlNode*> children(xmlNode* parent, std::string_view name = {})
{
    std::vector<xmlNode*> out;
    for (xmlNode* c = parent != nullptr ? parent->children : nullptr; c != nullptr; c = c->next) {
        if (c->type == XML_ELEMENT_NODE && (name.empty() || name_of(c) == name)) {
            out.push_back(c);
        }
    }
    return out;
}

xmlNode* child(xmlNode* parent, std::string_view name)
{
    auto all = children(parent, name);
    return all.empty() ? nullptr : all.front();
}

// --- libvirt-style writer -------------------------------------------------

void escape(std::string& out, std::string_view text, bool attribute)
{
    for (char ch : text) {
        switch (ch) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '\'':
            out += attribute ? "&apos;" : "'";
            break;
        case '"':
            out += attribute ? "&quot;" : "\"";
            break;
        default:
            out += ch;
        }
    }
}

std::string qualified(const xmlNode* node)
{
    std::string name = name_of(node);
    if (node->ns != nullptr && node->ns->prefix != nullptr) {
        name = std::string(reinterpret_cast<const char*>(node->ns->prefix)) + ":" + name;
    }
    return name;
}

void write_node(std::string& out, const xmlNode* node)
{
    switch (node->type) {
    case XML_ELEMENT_NODE: {
        const std::string name = qualified(node);
        out += "<" + name;
        for (const xmlNs* ns = node->nsDef; ns != nullptr; ns = ns->next) {
            out += ns->prefix != nullptr ? " xmlns:" + std::string(reinterpret_cast<const char*>(ns->prefix)) : " xmlns";
            out += "='";
            escape(out, ns->href != nullptr ? reinterpret_cast<const char*>(ns->href) : "", true);
            out += "'";
        }
        for (const xmlAttr* a = node->properties; a != nullptr; a = a->next) {
            std::string aname = reinterpret_cast<const char*>(a->name);
            if (a->ns != nullptr && a->ns->prefix != nullptr) {
                aname = std::string(reinterpret_cast<const char*>(a->ns->prefix)) + ":" + aname;
            }
            xmlChar* value = xmlNodeListGetString(node->doc, a->children, 1);
            out += " " + aname + "='";
            escape(out, value != nullptr ? reinterpret_cast<const char*>(value) : "", true);
            out += "'";
            xmlFree(value);
        }
        if (node->children == nullptr) {
            out += "/>";
            return;
        }
        out += ">";
        for (const xmlNode* c = node->children; c != nullptr; c = c->next) {
            write_node(out, c);
        }
        out += "</" + name + ">";
        return;
    }
    case XML_TEXT_NODE:
        escape(out, node->content != nullptr ? reinterpret_cast<const char*>(node->content) : "", false);
        return;
    case XML_CDATA_SECTION_NODE:
        out += "<![CDATA[";
        out += node->content != nullptr ? reinterpret_cast<const char*>(node->content) : "";
        out += "]]>";
        return;
    case XML_COMMENT_NODE:
        out += "<!--";
        out += node->content != nullptr ? reinterpret_cast<const char*>(node->content) : "";
        out += "-->";
        return;
    default:
        return; // PIs and entity references do not occur in libvirt's output
    }
}

std::string serialize(xmlDoc* doc)
{
    std::string out;
    for (const xmlNode* n = doc->children; n != nullptr; n = n->next) {
        if (n->type == XML_ELEMENT_NODE || n->type == XML_COMMENT_NODE) {
            write_node(out, n);
            out += "\n";
        }
    }
    return out;
}

// --- the edit ---------------------------------------------------------------

struct GuestAddr
{
    unsigned long domain = 0;
    unsigned long bus = 0;
    unsigned long slot = 0;
    unsigned long function = 0;
    bool multifunction = false;
};

std::optional<GuestAddr> read_address(xmlNode* address)
{
    if (address == nullptr) {
        return std::nullopt;
    }
    const auto bus = attr_number(address, "bus");
    const auto slot = attr_number(address, "slot");
    if (!bus || !slot) {
        return std::nullopt;
    }
    GuestAddr a;
    a.domain = attr_number(address, "domain").value_or(0);
    a.bus = *bus;
    a.slot = *slot;
    a.function = attr_number(address, "function").value_or(0);
    a.multifunction = attr(address, "multifunction") == "on";
    return a;
}

// The host function a PCI hostdev passes, if it is one.
std::optional<scan::PciAddress> hostdev_source(xmlNode* hostdev)
{
    if (attr(hostdev, "mode") != "subsystem" || attr(hostdev, "type") != "pci") {
        return std::nullopt;
    }
    const auto a = read_address(child(child(hostdev, "source"), "address"));
    if (!a) {
        return std::nullopt;
    }
    scan::PciAddress p;
    p.domain = static_cast<std::uint32_t>(a->domain);
    p.bus = static_cast<std::uint8_t>(a->bus);
    p.device = static_cast<std::uint8_t>(a->slot);
    p.function = static_cast<std::uint8_t>(a->function);
    return p;
}

std::string hex_attr(unsigned long value, int width)
{
    return "0x" + util::hex(value, width);
}

std::string hostdev_xml(const scan::PciAddress& host, unsigned long bus, unsigned long slot, unsigned long function, bool multifunction,
                        const std::string& indent)
{
    const std::string in1 = indent + "  ";
    const std::string in2 = in1 + "  ";
    return "<hostdev mode='subsystem' type='pci' managed='yes'>\n" + in1 + "<source>\n" + in2 + "<address domain='"
           + hex_attr(host.domain, 4) + "' bus='" + hex_attr(host.bus, 2) + "' slot='" + hex_attr(host.device, 2) + "' function='"
           + hex_attr(host.function, 1) + "'/>\n" + in1 + "</source>\n" + in1 + "<address type='pci' domain='0x0000' bus='"
           + hex_attr(bus, 2) + "' slot='" + hex_attr(slot, 2) + "' function='" + hex_attr(function, 1) + "'"
           + (multifunction ? " multifunction='on'" : "") + "/>\n" + indent + "</hostdev>";
}

// Parses an XML fragment in the context of `parent` and inserts it after
// `after` (or as the first child), preceded by a line break and indent.
Result<xmlNode*> insert_fragment(xmlNode* parent, xmlNode* after, const std::string& fragment, const std::string& indent)
{
    xmlNode* list = nullptr;
    const xmlParserErrors rc = xmlParseInNodeContext(parent, fragment.c_str(), static_cast<int>(fragment.size()),
                                                     XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING, &list);
    if (rc != XML_ERR_OK || list == nullptr) {
        return fail(Errc::internal, "cannot build the hostdev XML");
    }
    xmlNode* text = xmlNewText(reinterpret_cast<const xmlChar*>(("\n" + indent).c_str()));
    if (after == nullptr) {
        xmlNode* first_element = nullptr;
        for (xmlNode* c = parent->children; c != nullptr; c = c->next) {
            if (c->type == XML_ELEMENT_NODE) {
                first_element = c;
                break;
            }
        }
        if (first_element != nullptr) {
            // In front of the first element: its leading white space stays
            // in front of the new nodes, a new indent goes before it.
            xmlNode* last = nullptr;
            for (xmlNode* n = list; n != nullptr;) {
                xmlNode* next = n->next;
                xmlUnlinkNode(n);
                last = xmlAddPrevSibling(first_element, n);
                n = next;
            }
            xmlAddPrevSibling(first_element, text);
            return last;
        }
        if (parent->children != nullptr) {
            xmlAddPrevSibling(parent->children, text);
        } else {
            xmlAddChild(parent, text);
        }
    } else {
        xmlAddNextSibling(after, text);
    }
    xmlNode* last = text;
    for (xmlNode* n = list; n != nullptr;) {
        xmlNode* next = n->next;
        xmlUnlinkNode(n);
        last = xmlAddNextSibling(last, n);
        n = next;
    }
    return last;
}

// Removes an element and the white space in front of it.
void remove_element(xmlNode* node)
{
    xmlNode* prev = node->prev;
    if (prev != nullptr && prev->type == XML_TEXT_NODE && xmlIsBlankNode(prev) != 0) {
        xmlUnlinkNode(prev);
        xmlFreeNode(prev);
    }
    xmlUnlinkNode(node);
    xmlFreeNode(node);
}

// Indentation of the children of `parent` ("    " for <devices>' children).
std::string child_indent(xmlNode* parent, const std::string& fallback)
{
    for (xmlNode* c = parent->children; c != nullptr; c = c->next) {
        if (c->type == XML_TEXT_NODE && c->next != nullptr && c->next->type == XML_ELEMENT_NODE && c->content != nullptr) {
            std::string ws(reinterpret_cast<const char*>(c->content));
            const auto nl = ws.rfind('\n');
            if (nl != std::string::npos) {
                return ws.substr(nl + 1);
            }
        }
    }
    return fallback;
}

// libvirt's device order: a new hostdev goes after the last of these.
bool sorts_before_hostdev(const std::string& name)
{
    static const std::set<std::string> k_before{"emulator",  "disk",     "controller", "lease",   "filesystem", "interface",
                                                "smartcard", "serial",   "parallel",   "console", "channel",    "input",
                                                "tpm",       "graphics", "sound",      "audio",   "video",      "hostdev"};
    return k_before.count(name) != 0U;
}

// The parsed domain and where its devices go.
struct Domain
{
    DocPtr doc;
    xmlNode* devices = nullptr;
    std::string indent; // of <devices>' children
    bool q35 = false;
};

Result<Domain> open_domain(std::string_view domain_xml)
{
    Domain d;
    d.doc.reset(xmlReadMemory(domain_xml.data(), static_cast<int>(domain_xml.size()), "domain.xml", nullptr,
                              XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
    if (!d.doc) {
        const xmlError* err = xmlGetLastError();
        const std::string message = err != nullptr && err->message != nullptr ? std::string(err->message) : "malformed XML";
        xmlResetLastError();
        return fail(Errc::parse, "cannot parse the domain XML: " + std::string(util::trim(message)));
    }
    xmlNode* root = xmlDocGetRootElement(d.doc.get());
    if (!is_element(root, "domain")) {
        return fail(Errc::parse, "the XML is not a libvirt <domain>");
    }
    const std::string top_indent = child_indent(root, "  ");
    d.devices = child(root, "devices");
    if (d.devices == nullptr) {
        PASSTHRU_TRY_ASSIGN(d.devices, insert_fragment(root, children(root).empty() ? nullptr : children(root).back(),
                                                       "<devices>\n" + top_indent + "</devices>", top_indent));
    }
    d.indent = child_indent(d.devices, top_indent + top_indent);
    if (xmlNode* type = child(child(root, "os"), "type")) {
        d.q35 = attr(type, "machine").value_or("").find("q35") != std::string::npos;
    }
    for (xmlNode* c : children(d.devices, "controller")) {
        if (attr(c, "type") == "pci" && attr(c, "model") == "pcie-root") {
            d.q35 = true;
        }
    }
    return d;
}

// True when the card's functions are attached exactly as planned: every
// function once, managed, as functions 0.. of one guest slot (multifunction
// on function 0 when there are several).
bool attached_as_planned(const std::vector<std::pair<xmlNode*, scan::PciAddress>>& found, const std::vector<scan::PciAddress>& fns)
{
    if (found.size() != fns.size()) {
        return false;
    }
    std::optional<GuestAddr> first;
    for (std::size_t i = 0; i < fns.size(); ++i) {
        const auto it = std::find_if(found.begin(), found.end(), [&](const auto& f) { return f.second == fns[i]; });
        if (it == found.end() || attr(it->first, "managed") != "yes") {
            return false;
        }
        const auto g = read_address(child(it->first, "address"));
        if (!g || g->function != i || (i == 0 && fns.size() > 1 && !g->multifunction)) {
            return false;
        }
        if (!first) {
            first = g;
        } else if (g->bus != first->bus || g->slot != first->slot) {
            return false;
        }
    }
    return true;
}

// Pass 1: cards already attached as planned stay (false in the result);
// stray hostdevs of the other cards' functions go.
std::vector<bool> drop_partial_cards(xmlNode* devices, const std::vector<std::vector<scan::PciAddress>>& cards, HostdevEdit& edit)
{
    std::vector<bool> needs(cards.size(), true);
    for (std::size_t k = 0; k < cards.size(); ++k) {
        const auto& fns = cards[k];
        std::vector<std::pair<xmlNode*, scan::PciAddress>> found;
        for (xmlNode* h : children(devices, "hostdev")) {
            if (auto src = hostdev_source(h); src && std::find(fns.begin(), fns.end(), *src) != fns.end()) {
                found.emplace_back(h, *src);
            }
        }
        if (attached_as_planned(found, fns)) {
            needs[k] = false;
            continue;
        }
        for (auto& [node, src] : found) {
            edit.reasons.push_back("replace the hostdev of " + src.str() + " (not one multifunction guest device with the whole card)");
            remove_element(node);
        }
    }
    return needs;
}

// Guest PCI addresses in use and the PCI controllers, after the removals.
struct GuestBuses
{
    std::set<std::pair<unsigned long, unsigned long>> used; // (bus, slot)
    std::map<unsigned long, std::string> controllers;       // index -> model

    explicit GuestBuses(xmlNode* devices)
    {
        for (xmlNode* d : children(devices)) {
            for (xmlNode* a : children(d, "address")) {
                if (attr(a, "type") == "pci") {
                    if (auto g = read_address(a)) {
                        used.insert({g->bus, g->slot});
                    }
                }
            }
            if (is_element(d, "controller") && attr(d, "type") == "pci") {
                if (auto index = attr_number(d, "index")) {
                    controllers[*index] = attr(d, "model").value_or("");
                }
            }
        }
    }
    [[nodiscard]] bool bus_used(unsigned long bus) const
    {
        return std::any_of(used.begin(), used.end(), [&](const auto& u) { return u.first == bus; });
    }
};

// q35: a free pcie-root-port, or a new one added after the disks and
// controllers. The card goes in its slot 0.
Result<unsigned long> root_port_for(Domain& d, GuestBuses& buses, const std::string& gpu, HostdevEdit& edit)
{
    for (const auto& [index, model] : buses.controllers) {
        if (model == "pcie-root-port" && !buses.bus_used(index)) {
            return index;
        }
    }
    const unsigned long port = buses.controllers.empty() ? 1 : std::max<unsigned long>(1, buses.controllers.rbegin()->first + 1);
    if (port > 0xff) {
        return fail(Errc::precondition, "no PCI bus number left for another pcie-root-port");
    }
    xmlNode* after = nullptr;
    for (xmlNode* c : children(d.devices)) {
        const std::string n = name_of(c);
        if (n == "emulator" || n == "disk" || n == "controller") {
            after = c;
        }
    }
    PASSTHRU_TRY(insert_fragment(d.devices, after, "<controller type='pci' index='" + std::to_string(port) + "' model='pcie-root-port'/>",
                                 d.indent));
    buses.controllers[port] = "pcie-root-port";
    edit.reasons.push_back("add pcie-root-port controller " + std::to_string(port) + " for GPU " + gpu);
    return port;
}

// i440fx: the first free slot on bus 0.
Result<unsigned long> free_bus0_slot(const GuestBuses& buses, const std::string& gpu)
{
    for (unsigned long s = 1; s <= 0x1f; ++s) {
        if (buses.used.count({0, s}) == 0U) {
            return s;
        }
    }
    return fail(Errc::precondition, "no free guest PCI slot on bus 0 for GPU " + gpu);
}

// Pass 2: one card as one multifunction guest device, after libvirt's
// devices that sort before hostdevs.
Result<void> attach_card(Domain& d, GuestBuses& buses, const std::vector<scan::PciAddress>& fns, HostdevEdit& edit)
{
    const std::string gpu = fns.front().slot();
    unsigned long bus = 0;
    unsigned long slot = 0;
    if (d.q35) {
        PASSTHRU_TRY_ASSIGN(bus, root_port_for(d, buses, gpu, edit));
    } else {
        PASSTHRU_TRY_ASSIGN(slot, free_bus0_slot(buses, gpu));
    }
    buses.used.insert({bus, slot});
    xmlNode* after = nullptr;
    for (xmlNode* c : children(d.devices)) {
        if (sorts_before_hostdev(name_of(c))) {
            after = c;
        }
    }
    for (std::size_t i = 0; i < fns.size(); ++i) {
        PASSTHRU_TRY_ASSIGN(
            after, insert_fragment(d.devices, after, hostdev_xml(fns[i], bus, slot, i, i == 0 && fns.size() > 1, d.indent), d.indent));
    }
    edit.reasons.push_back("GPU " + gpu + ": " + std::to_string(fns.size()) + " hostdev(s), managed='yes', guest address "
                           + hex_attr(bus, 2) + ":" + hex_attr(slot, 2)
                           + (fns.size() > 1 ? " functions 0-" + std::to_string(fns.size() - 1) + ", multifunction='on'" : ""));
    return {};
}

} // namespace

Result<HostdevEdit> add_pci_hostdevs(std::string_view domain_xml, const std::vector<std::vector<scan::PciAddress>>& cards)
{
    auto domain = open_domain(domain_xml);
    if (!domain) {
        return tl::unexpected(domain.error());
    }
    HostdevEdit edit;
    const std::vector<bool> needs = drop_partial_cards(domain->devices, cards, edit);
    GuestBuses buses(domain->devices);
    for (std::size_t k = 0; k < cards.size(); ++k) {
        if (needs[k]) {
            PASSTHRU_TRY(attach_card(*domain, buses, cards[k], edit));
        }
    }
    edit.changed = std::any_of(needs.begin(), needs.end(), [](bool n) { return n; });
    if (!edit.changed) {
        edit.xml = std::string(domain_xml);
        edit.reasons.clear();
        return edit;
    }
    edit.xml = serialize(domain->doc.get());
    return edit;
}

namespace {

// <memory> in MiB: its unit attribute (KiB when absent), the units libvirt documents.
std::optional<unsigned long> memory_mib(xmlNode* memory)
{
    if (memory == nullptr || memory->children == nullptr) {
        return std::nullopt;
    }
    xmlChar* text = xmlNodeGetContent(memory);
    const auto value = util::parse_int(util::trim(reinterpret_cast<const char*>(text)));
    xmlFree(text);
    if (!value || *value < 0) {
        return std::nullopt;
    }
    static const std::map<std::string, unsigned long> k_per_mib = {
        {"b", 0}, {"bytes", 0}, {"k", 1}, {"KiB", 1}, {"M", 1024}, {"MiB", 1024}, {"G", 1024UL * 1024}, {"GiB", 1024UL * 1024}};
    const auto unit = k_per_mib.find(attr(memory, "unit").value_or("KiB"));
    if (unit == k_per_mib.end()) {
        return std::nullopt;
    }
    const auto n = static_cast<unsigned long>(*value);
    if (unit->second == 0) {
        return n / (1024UL * 1024);
    }
    return unit->second == 1 ? n / 1024 : n * (unit->second / 1024);
}

} // namespace

Result<DomainCpu> read_domain_cpu(std::string_view domain_xml)
{
    auto d = open_domain(domain_xml);
    if (!d) {
        return tl::unexpected(d.error());
    }
    xmlNode* root = xmlDocGetRootElement(d->doc.get());
    DomainCpu out;
    out.memory_mib = memory_mib(child(root, "memory"));
    xmlNode* cpu = child(root, "cpu");
    if (cpu == nullptr) {
        return out;
    }
    out.present = true;
    out.mode = attr(cpu, "mode").value_or("custom");
    if (xmlNode* model = child(cpu, "model"); model != nullptr) {
        xmlChar* text = xmlNodeGetContent(model);
        out.model = std::string(util::trim(reinterpret_cast<const char*>(text)));
        xmlFree(text);
    }
    if (xmlNode* max = child(cpu, "maxphysaddr"); max != nullptr) {
        out.maxphysaddr = attr(max, "mode").value_or("");
        out.maxphysaddr_bits = attr_number(max, "bits");
    }
    return out;
}

Result<std::string> pass_host_phys_bits(std::string_view domain_xml)
{
    auto d = open_domain(domain_xml);
    if (!d) {
        return tl::unexpected(d.error());
    }
    xmlNode* root = xmlDocGetRootElement(d->doc.get());
    const std::string top = child_indent(root, "  ");
    xmlNode* cpu = child(root, "cpu");
    if (cpu == nullptr) {
        xmlNode* after = child(root, "features") != nullptr ? child(root, "features") : child(root, "os");
        PASSTHRU_TRY(insert_fragment(root, after,
                                     "<cpu mode='host-passthrough' check='none' migratable='on'>\n" + top + top
                                         + "<maxphysaddr mode='passthrough'/>\n" + top + "</cpu>",
                                     top));
        return serialize(d->doc.get());
    }
    if (attr(cpu, "mode").value_or("custom") != "host-passthrough") {
        return fail(Errc::precondition, "the domain's <cpu mode='" + attr(cpu, "mode").value_or("custom") + "'> is not host-passthrough");
    }
    if (xmlNode* old = child(cpu, "maxphysaddr"); old != nullptr) {
        remove_element(old);
    }
    const std::string inner = child_indent(cpu, top + top);
    PASSTHRU_TRY(insert_fragment(cpu, children(cpu).empty() ? nullptr : children(cpu).back(), "<maxphysaddr mode='passthrough'/>", inner));
    return serialize(d->doc.get());
}

} // namespace passthru::plan
