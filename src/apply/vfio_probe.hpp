// SPDX-License-Identifier: GPL-2.0-or-later
// The VFIO calls verify makes on an IOMMU group of the live host, the ones
// QEMU makes when a VM starts (docs/facts.md: vfio-api): open the group,
// ask whether it is viable, attach it to a fresh container with the type1
// IOMMU, open each planned function and read its regions. Closing the
// descriptors undoes all of it. Behind an interface so that the reading of
// the kernel's answers (apply/verify.cpp) is unit-tested with a fake; the
// kernel path is exercised on a real kernel under QEMU.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "util/host_fs.hpp"

namespace passthru::apply {

// What VFIO_DEVICE_GET_INFO and VFIO_DEVICE_GET_REGION_INFO said of one function.
struct VfioDeviceInfo
{
    std::uint32_t regions = 0;
    std::uint32_t irqs = 0;
    // The first region the kernel refused to describe, and its errno (0: none).
    std::uint32_t refused_region = 0;
    int region_err = 0;
};

// Whether the kernel's refusal to describe region index (errno err) only says the
// region is not there: the VGA region (VFIO_PCI_VGA_REGION_INDEX, 8) of a function
// vfio-pci gives no VGA access (not a VGA device, or a kernel without
// CONFIG_VFIO_PCI_VGA) is refused with EINVAL, and QEMU asks for it only with x-vga=on
// (docs/facts.md: vfio-api). Any other refusal is a failure.
bool vfio_region_absent(std::uint32_t index, int err);

// The IOMMU types verify asks the container for, best first.
enum class VfioIommu
{
    type1v2, // VFIO_TYPE1v2_IOMMU
    type1,   // VFIO_TYPE1_IOMMU
};

// The VFIO calls on one IOMMU group, in the order verify makes them. Each
// returns 0 or the errno the kernel answered. The kernel's implementation
// holds the descriptors it opened and closes them when destroyed.
class VfioGroupCalls
{
public:
    VfioGroupCalls() = default;
    VfioGroupCalls(const VfioGroupCalls&) = delete;
    VfioGroupCalls& operator=(const VfioGroupCalls&) = delete;
    VfioGroupCalls(VfioGroupCalls&&) = delete;
    VfioGroupCalls& operator=(VfioGroupCalls&&) = delete;
    virtual ~VfioGroupCalls() = default;

    // open(2) of /dev/vfio/<group>, read-write (EBUSY: another process has it open).
    virtual int open_group() = 0;
    // VFIO_GROUP_GET_STATUS: whether VFIO_GROUP_FLAGS_VIABLE is set.
    virtual int group_viable(bool& viable) = 0;
    // open(2) of /dev/vfio/vfio, then VFIO_GET_API_VERSION.
    virtual int open_container(int& api_version) = 0;
    // VFIO_CHECK_EXTENSION: whether the container offers that IOMMU type.
    virtual int has_iommu(VfioIommu type, bool& offered) = 0;
    // VFIO_GROUP_SET_CONTAINER: the group joins the container.
    virtual int set_container() = 0;
    // VFIO_SET_IOMMU: the container gets its IOMMU (of that type).
    virtual int set_iommu(VfioIommu type) = 0;
    // VFIO_GROUP_GET_DEVICE_FD for a function ("0000:01:00.0"), then
    // VFIO_DEVICE_GET_INFO and VFIO_DEVICE_GET_REGION_INFO for each region;
    // the device's descriptor is closed before it returns.
    virtual int device(const std::string& name, VfioDeviceInfo& info) = 0;
};

// The kernel's VFIO for IOMMU group `group` of the host fs reads: every
// descriptor comes from fs.open_char_device (so only below its root).
std::unique_ptr<VfioGroupCalls> kernel_vfio(const util::HostFs& fs, int group);

// How verify reaches VFIO for a group. Empty: VFIO is not asked (--root).
using VfioOpener = std::function<std::unique_ptr<VfioGroupCalls>(int group)>;

// The value of VFIO_API_VERSION this build was compiled against.
int vfio_api_version();

} // namespace passthru::apply
