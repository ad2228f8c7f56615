// SPDX-License-Identifier: GPL-2.0-or-later
#include "apply/vfio_probe.hpp"

#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace passthru::apply {

namespace {

unsigned long iommu_value(VfioIommu type)
{
    return type == VfioIommu::type1v2 ? VFIO_TYPE1v2_IOMMU : VFIO_TYPE1_IOMMU;
}

// 0, or the errno of a failed ioctl(2) (docs/facts.md: vfio-api).
int ioctl_errno(int fd, unsigned long request, void* arg)
{
    return ::ioctl(fd, request, arg) < 0 ? errno : 0;
}

int ioctl_errno(int fd, unsigned long request, unsigned long arg)
{
    return ::ioctl(fd, request, arg) < 0 ? errno : 0;
}

// The descriptor of a device, closed when it goes out of scope.
struct DeviceFd
{
    int fd = -1;
    DeviceFd(const DeviceFd&) = delete;
    DeviceFd& operator=(const DeviceFd&) = delete;
    DeviceFd(DeviceFd&&) = delete;
    DeviceFd& operator=(DeviceFd&&) = delete;
    explicit DeviceFd(int f) : fd(f) {}
    ~DeviceFd()
    {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

class KernelVfio final : public VfioGroupCalls
{
public:
    KernelVfio(const util::HostFs& fs, int group) : m_fs(fs), m_group(group) {}

    int open_group() override
    {
        m_group_fd = m_fs.open_char_device("/dev/vfio/" + std::to_string(m_group));
        return m_group_fd.error();
    }

    int group_viable(bool& viable) override
    {
        vfio_group_status status{};
        status.argsz = sizeof status;
        const int err = ioctl_errno(m_group_fd.fd(), VFIO_GROUP_GET_STATUS, &status);
        viable = err == 0 && (status.flags & VFIO_GROUP_FLAGS_VIABLE) != 0;
        return err;
    }

    int open_container(int& api_version) override
    {
        m_container = m_fs.open_char_device("/dev/vfio/vfio");
        if (!m_container.ok()) {
            return m_container.error();
        }
        const int version = ::ioctl(m_container.fd(), VFIO_GET_API_VERSION);
        if (version < 0) {
            return errno;
        }
        api_version = version;
        return 0;
    }

    int has_iommu(VfioIommu type, bool& offered) override
    {
        const int answer = ::ioctl(m_container.fd(), VFIO_CHECK_EXTENSION, iommu_value(type));
        if (answer < 0) {
            return errno;
        }
        offered = answer > 0;
        return 0;
    }

    int set_container() override
    {
        int container = m_container.fd();
        return ioctl_errno(m_group_fd.fd(), VFIO_GROUP_SET_CONTAINER, &container);
    }

    int set_iommu(VfioIommu type) override { return ioctl_errno(m_container.fd(), VFIO_SET_IOMMU, iommu_value(type)); }

    int device(const std::string& name, VfioDeviceInfo& info) override
    {
        std::vector<char> arg(name.begin(), name.end());
        arg.push_back('\0');
        const DeviceFd dev(::ioctl(m_group_fd.fd(), VFIO_GROUP_GET_DEVICE_FD, arg.data()));
        if (dev.fd < 0) {
            return errno;
        }
        vfio_device_info dinfo{};
        dinfo.argsz = sizeof dinfo;
        if (const int err = ioctl_errno(dev.fd, VFIO_DEVICE_GET_INFO, &dinfo); err != 0) {
            return err;
        }
        info.regions = dinfo.num_regions;
        info.irqs = dinfo.num_irqs;
        for (std::uint32_t i = 0; i < dinfo.num_regions; ++i) {
            vfio_region_info region{};
            region.argsz = sizeof region;
            region.index = i;
            if (const int err = ioctl_errno(dev.fd, VFIO_DEVICE_GET_REGION_INFO, &region); err != 0) {
                if (vfio_region_absent(i, err)) {
                    continue;
                }
                info.refused_region = i;
                info.region_err = err;
                break;
            }
        }
        return 0;
    }

private:
    const util::HostFs& m_fs;
    int m_group;
    // Destroyed in reverse order: the container's descriptor closes first,
    // then the group's, whose release takes the group out of the container
    // and frees it (docs/facts.md: vfio-api). Nothing is left behind.
    util::HostDevice m_group_fd;
    util::HostDevice m_container;
};

} // namespace

std::unique_ptr<VfioGroupCalls> kernel_vfio(const util::HostFs& fs, int group)
{
    return std::make_unique<KernelVfio>(fs, group);
}

int vfio_api_version()
{
    return VFIO_API_VERSION;
}

bool vfio_region_absent(std::uint32_t index, int err)
{
    return index == VFIO_PCI_VGA_REGION_INDEX && err == EINVAL;
}

} // namespace passthru::apply
