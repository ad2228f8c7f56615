// SPDX-License-Identifier: GPL-2.0-or-later
// A small host tree built in a temp dir for targeted unit tests: PCI
// functions laid out like sysfs (device directories under sys/devices,
// relative links from sys/bus/pci/devices, iommu_group and driver links).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace passthru::test {

class FakeHost
{
public:
    class Device
    {
    public:
        Device& ids(std::uint16_t vendor, std::uint16_t device)
        {
            m_host->write_attr(m_path, "vendor", "0x" + hex4(vendor));
            m_host->write_attr(m_path, "device", "0x" + hex4(device));
            return *this;
        }
        Device& pci_class(std::uint32_t code)
        {
            char buf[16];
            std::snprintf(buf, sizeof buf, "0x%06x", code);
            m_host->write_attr(m_path, "class", buf);
            return *this;
        }
        Device& attr(const std::string& name, const std::string& value)
        {
            m_host->write_attr(m_path, name, value);
            return *this;
        }
        Device& group(int number)
        {
            const std::string rel = "sys/kernel/iommu_groups/" + std::to_string(number);
            m_host->dir.write(rel + "/type", "DMA\n");
            m_host->dir.symlink(m_path + "/iommu_group", m_host->up(m_path) + rel);
            m_host->dir.symlink(rel + "/devices/" + m_addr, "../../../../" + m_path);
            return *this;
        }
        Device& driver(const std::string& name)
        {
            m_host->dir.symlink(m_path + "/driver", m_host->up(m_path) + "sys/bus/pci/drivers/" + name);
            m_host->dir.write("sys/bus/pci/drivers/" + name + "/bind", "");
            return *this;
        }

    private:
        friend class FakeHost;
        FakeHost* m_host = nullptr;
        std::string m_addr;
        std::string m_path; // relative to the root
    };

    // Adds a function below `parent_path` (a path relative to sys/devices,
    // e.g. "pci0000:00/0000:00:01.1") or directly under the root complex.
    Device add(const std::string& addr, const std::string& parent = "pci0000:00")
    {
        Device dev;
        dev.m_host = this;
        dev.m_addr = addr;
        dev.m_path = "sys/devices/" + parent + "/" + addr;
        dir.write(dev.m_path + "/revision", "0xa1\n");
        dir.symlink("sys/bus/pci/devices/" + addr, "../../../devices/" + parent + "/" + addr);
        return dev;
    }
    std::string path_of(const std::string& parent, const std::string& addr) const { return parent + "/" + addr; }

    TempDir dir;

private:
    void write_attr(const std::string& path, const std::string& name, const std::string& value)
    {
        dir.write(path + "/" + name, value + "\n");
    }
    // "../" repeated to climb from a device directory to the root.
    static std::string up(const std::string& path)
    {
        std::string out;
        for (char c : path) {
            if (c == '/') {
                out += "../";
            }
        }
        return out + "../";
    }
    static std::string hex4(std::uint16_t v)
    {
        char buf[8];
        std::snprintf(buf, sizeof buf, "%04x", v);
        return buf;
    }
};

} // namespace passthru::test
