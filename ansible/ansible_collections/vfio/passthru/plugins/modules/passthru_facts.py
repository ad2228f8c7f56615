#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: passthru developers
# GNU General Public License v2.0 or later (see https://www.gnu.org/licenses/old-licenses/gpl-2.0.txt)
# SPDX-License-Identifier: GPL-2.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: passthru_facts
short_description: GPUs, IOMMU groups and isolation verdicts of a node, from passthru scan
version_added: 0.1.0
description:
  - Runs C(passthru scan --json) on the managed node and sets the fact C(passthru) - the node's
    Proxmox VE name, its GPU cards with their isolation verdict and PCI ids, its IOMMU groups, host
    facts and the problems passthru found.
  - It only reads; it never changes the node.
options:
  gather_subset:
    description:
      - Which parts to return besides C(node) and C(schema).
      - C(host) the CPU, kernel, boot loader and IOMMU state; C(gpus) the GPU cards, each with the vendor,
        device and subsystem ids of its function 0; C(groups) the IOMMU groups; C(problems) what is
        wrong with the host; C(devices) every PCI function (large); C(scan) the whole C(passthru scan --json)
        document, which M(vfio.passthru.pci_mapping) hands back to passthru (large); C(all) all of them but
        C(devices) and C(scan).
    type: list
    elements: str
    choices: [all, host, gpus, groups, problems, devices, scan]
    default: [all]
  root:
    description:
      - The host tree passthru reads, C(--root).
    type: path
    default: /
  binary:
    description:
      - The passthru program, a path or a name looked up in C(PATH).
    type: path
    default: passthru
  data_dir:
    description:
      - Read templates and profiles from this directory first, C(--data-dir).
    type: path
requirements:
  - passthru on the managed node
author:
  - passthru developers (!UNKNOWN)
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check mode), when in diff mode.
    support: none
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
'''

EXAMPLES = r'''
- name: Read the node's GPUs and their verdicts
  vfio.passthru.passthru_facts:

- name: Show the cards that can be passed through
  ansible.builtin.debug:
    msg: "{{ ansible_facts.passthru.gpus | selectattr('isolation', 'equalto', 'clean') | map(attribute='slot') | list }}"
'''

RETURN = r'''
ansible_facts:
  description: The facts, under the key C(passthru).
  returned: always
  type: complex
  contains:
    passthru:
      description:
        - C(node) the node's name (the host name up to the first dot, from C(/etc/hostname) under the
          root; null when unknown), C(schema) the scan's schema, and the parts of I(gather_subset) -
          C(host), C(gpus), C(groups), C(problems), C(devices) - as C(passthru scan --json) gives them, and
          C(scan), that whole document.
        - Each GPU also carries C(id) (vendor:device of function 0), C(subsystem_id) and C(iommu_group)
          (of function 0), the values a cluster PCI mapping needs.
      returned: always
      type: dict
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.vfio.passthru.plugins.module_utils import passthru as pt

PARTS = ('host', 'gpus', 'groups', 'problems')


def gpu_facts(scan):
    """The scan's GPUs, each with the ids of its function 0 (what a PCI mapping names)."""
    devices = dict((d.get('address'), d) for d in scan.get('devices', []))
    out = []
    for gpu in scan.get('gpus', []):
        card = dict(gpu)
        fn0 = devices.get((gpu.get('functions') or [None])[0]) or {}
        vendor, device = fn0.get('vendor'), fn0.get('device')
        card['id'] = '%s:%s' % (vendor, device) if vendor and device else None
        card['subsystem_id'] = fn0.get('subsystem')
        card['iommu_group'] = fn0.get('iommu_group')
        out.append(card)
    return out


def read_node(root):
    path = os.path.join(root, 'etc/hostname')
    try:
        with open(path) as handle:
            return pt.node_name(handle.read())
    except (IOError, OSError):
        return None


def main():
    argument_spec = dict(
        gather_subset=dict(type='list', elements='str', default=['all'],
                           choices=['all', 'host', 'gpus', 'groups', 'problems', 'devices', 'scan']),
    )
    argument_spec.update(pt.COMMON_ARGS)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    scan = pt.run_json(module, ['scan', '--json'], 'passthru scan')
    subset = set(module.params['gather_subset'])
    if 'all' in subset:
        subset.update(PARTS)
    facts = dict(node=read_node(module.params['root']), schema=scan.get('schema'))
    if 'host' in subset:
        facts['host'] = scan.get('host')
    if 'gpus' in subset:
        facts['gpus'] = gpu_facts(scan)
    if 'groups' in subset:
        facts['groups'] = scan.get('iommu_groups', [])
    if 'problems' in subset:
        facts['problems'] = scan.get('problems', [])
    if 'devices' in subset:
        facts['devices'] = scan.get('devices', [])
    if 'scan' in subset:
        facts['scan'] = scan
    module.exit_json(changed=False, ansible_facts=dict(passthru=facts))


if __name__ == '__main__':
    main()
