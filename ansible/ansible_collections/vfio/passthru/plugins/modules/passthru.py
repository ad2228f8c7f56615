#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: passthru developers
# GNU General Public License v2.0 or later (see https://www.gnu.org/licenses/old-licenses/gpl-2.0.txt)
# SPDX-License-Identifier: GPL-2.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: passthru
short_description: Plan, apply and roll back VFIO GPU passthrough on a Proxmox VE node with passthru
version_added: 0.1.0
description:
  - Runs C(passthru) on the managed node.
  - With I(state=present) it plans the request (C(passthru plan --json)) and applies exactly that plan
    (C(passthru apply --plan)); a request that is already in place changes nothing.
  - With I(state=absent) it rolls the node back to how it was before passthru's first generation that
    is still in effect (C(passthru rollback --to N)); a node with nothing applied changes nothing.
  - A request passthru refuses as unsafe (exit status 3) fails the task with passthru's one-line error
    in C(msg) and the exit status in C(rc), unless I(allow_refusal) is set.
  - The changes take effect at the next boot; reboot the node, then run C(passthru verify).
options:
  state:
    description:
      - C(present) plans and applies the request; C(absent) undoes every generation passthru applied.
    type: str
    choices: [present, absent]
    default: present
  vm:
    description:
      - The VMID of the Proxmox VE VM (or the libvirt domain name with I(backend=libvirt)), C(--vm).
      - Required with I(state=present).
    type: str
  gpus:
    description:
      - Which GPU cards, C(--gpus) - C(all) (every NVIDIA card), indexes from the scan or slot addresses.
      - Required with I(state=present).
    type: list
    elements: str
  mapping:
    description:
      - Pass the cards through the Proxmox VE cluster PCI mapping with this id, C(--mapping); card N
        after the first uses the id with C(-N) appended.
    type: str
  profile:
    description:
      - The VM profile from passthru's profiles (C(--profile)); passthru's default when not set.
    type: str
  backend:
    description:
      - The VM backend, C(--backend).
    type: str
    choices: [proxmox, libvirt]
    default: proxmox
  connect:
    description:
      - The libvirt connection URI, C(--connect) (I(backend=libvirt)).
    type: str
  acs_override:
    description:
      - Add C(pcie_acs_override=downstream,multifunction), C(--acs-override). This weakens isolation.
    type: bool
    default: false
  bond:
    description:
      - Bond these NICs, C(--bond); the bond and bridge are staged in C(/etc/network/interfaces.new).
    type: list
    elements: str
  bond_mode:
    description:
      - The bond mode, C(--bond-mode).
    type: str
  bond_name:
    description:
      - The name of the bond, C(--bond-name).
    type: str
  bond_xmit_hash_policy:
    description:
      - The transmit hash policy, C(--bond-xmit-hash-policy).
    type: str
  bridge:
    description:
      - The bridge to put the bond under, C(--bridge).
    type: str
  address:
    description:
      - The address of the bridge in CIDR form, C(--address).
    type: str
  gateway:
    description:
      - The default gateway of the bridge, C(--gateway).
    type: str
  vlan_aware:
    description:
      - Make the bridge VLAN-aware, C(--vlan-aware).
    type: bool
    default: false
  pin_nics:
    description:
      - Pin every unpinned NIC's name to its MAC as Proxmox VE 9 does, C(--pin-nics).
    type: bool
    default: false
  allow_refusal:
    description:
      - When passthru refuses the request (exit status 3), report it (C(refused=true), C(rc=3)) without
        failing the task. Nothing is written either way.
    type: bool
    default: false
  root:
    description:
      - The host tree passthru reads and writes, C(--root). Under any other root than C(/) passthru
        records the commands it would run (update-initramfs, update-grub, qm) instead of running them.
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
notes:
  - Check mode runs C(passthru apply --dry-run) on the plan and writes nothing; C(changed) says whether
    the plan has changes.
  - Diff mode returns the unified diff of every file the plan (or the rollback) changes.
  - The network options that apply a change live (C(--apply-network), C(--confirm-timeout)) are not
    offered - they wait for C(passthru confirm) from a second connection.
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
    support: full
'''

EXAMPLES = r'''
- name: Pass every NVIDIA card of the node to VM 101 through the cluster mapping "rtx"
  vfio.passthru.passthru:
    vm: "101"
    gpus: all
    mapping: rtx
  register: passthru_result

- name: Only the cards in slots 01:00 and 41:00
  vfio.passthru.passthru:
    vm: "102"
    gpus: ["0000:01:00", "0000:41:00"]

- name: Undo everything passthru applied on the node
  vfio.passthru.passthru:
    state: absent
'''

RETURN = r'''
plan:
  description: The plan passthru made (schema C(passthru.plan/1)); with I(state=absent) not returned.
  returned: state=present
  type: dict
refused:
  description: Whether passthru refused the request (exit status 3).
  returned: always
  type: bool
rc:
  description: passthru's exit status.
  returned: always
  type: int
generation:
  description: The generation number passthru recorded for this change (apply or rollback).
  returned: when a change was written
  type: int
rolled_back:
  description: The generations C(state=absent) undid (or would undo in check mode).
  returned: state=absent
  type: list
  elements: int
hints:
  description: passthru's hints after a refusal or error - what to do instead.
  returned: on refusal
  type: list
  elements: str
stdout_lines:
  description: What passthru printed (the dry run, the apply or the rollback).
  returned: always
  type: list
  elements: str
'''

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.vfio.passthru.plugins.module_utils import passthru as pt

# Module option -> passthru request option (value options, then flags).
VALUE_OPTIONS = (('vm', '--vm'), ('mapping', '--mapping'), ('profile', '--profile'), ('backend', '--backend'),
                 ('connect', '--connect'), ('bond_mode', '--bond-mode'), ('bond_name', '--bond-name'),
                 ('bond_xmit_hash_policy', '--bond-xmit-hash-policy'), ('bridge', '--bridge'),
                 ('address', '--address'), ('gateway', '--gateway'))
LIST_OPTIONS = (('gpus', '--gpus'), ('bond', '--bond'))
FLAG_OPTIONS = (('acs_override', '--acs-override'), ('vlan_aware', '--vlan-aware'), ('pin_nics', '--pin-nics'))


def request_argv(params):
    argv = []
    for key, flag in VALUE_OPTIONS:
        if params.get(key) is not None:
            argv += [flag, str(params[key])]
    for key, flag in LIST_OPTIONS:
        if params.get(key):
            argv += [flag, ','.join(params[key])]
    for key, flag in FLAG_OPTIONS:
        if params.get(key):
            argv.append(flag)
    return argv


def present(module):
    params = module.params
    workdir = tempfile.mkdtemp(prefix='passthru-', dir=module.tmpdir)
    plan_file = os.path.join(workdir, 'plan.json')
    rc, out, err = pt.run(module, ['plan', '--json', '--out', plan_file] + request_argv(params))
    plan = None
    try:
        plan = module.from_json(out) if out.strip() else None
    except ValueError:
        plan = None
    if rc == pt.EXIT_REFUSED:
        line = pt.error_line(err)
        if params['allow_refusal']:
            module.exit_json(changed=False, refused=True, rc=rc, msg=line, hints=pt.hints(err), plan=plan,
                             stdout_lines=[])
        pt.fail(module, 'passthru plan', rc, out, err, refused=True, plan=plan)
    if rc != pt.EXIT_OK or plan is None:
        pt.fail(module, 'passthru plan', rc, out, err, refused=False)
    changed = bool(plan.get('changes_pending')) or bool(plan.get('files'))
    result = dict(changed=changed, refused=False, plan=plan, rc=rc)
    if module._diff:
        result['diff'] = pt.plan_diff(plan)
    if not changed:
        module.exit_json(stdout_lines=[], **result)
    step = ['apply', '--dry-run', '--plan', plan_file] if module.check_mode else ['apply', '--yes', '--plan', plan_file]
    rc, out, err = pt.run(module, step)
    if rc != pt.EXIT_OK:
        pt.fail(module, 'passthru ' + ' '.join(step[:2]), rc, out, err, refused=rc == pt.EXIT_REFUSED, plan=plan)
    result['rc'] = rc
    if not module.check_mode:
        result['generation'] = pt.generation_of(out)
    module.exit_json(stdout_lines=out.splitlines(), **result)


def active_generations(history):
    """The apply generations still in effect, oldest first."""
    active = history.get('active') or []
    numbers = []
    for item in active:
        number = item.get('id') if isinstance(item, dict) else item
        if isinstance(number, int):
            numbers.append(number)
    return sorted(numbers)


def absent(module):
    history = pt.run_json(module, ['history', '--json'], 'passthru history')
    undo = active_generations(history)
    result = dict(changed=bool(undo), refused=False, rolled_back=undo, rc=0)
    if not undo:
        module.exit_json(stdout_lines=[], **result)
    step = ['rollback', '--yes', '--to', str(undo[0])] + (['--dry-run'] if module.check_mode else [])
    rc, out, err = pt.run(module, step)
    if rc != pt.EXIT_OK:
        pt.fail(module, 'passthru rollback', rc, out, err, refused=rc == pt.EXIT_REFUSED, rolled_back=[])
    if module._diff:
        result['diff'] = dict(prepared=out)
    if not module.check_mode:
        result['generation'] = pt.generation_of(out)
    module.exit_json(stdout_lines=out.splitlines(), **result)


def main():
    argument_spec = dict(
        state=dict(type='str', choices=['present', 'absent'], default='present'),
        vm=dict(type='str'),
        gpus=dict(type='list', elements='str'),
        mapping=dict(type='str'),
        profile=dict(type='str'),
        backend=dict(type='str', choices=['proxmox', 'libvirt'], default='proxmox'),
        connect=dict(type='str'),
        acs_override=dict(type='bool', default=False),
        bond=dict(type='list', elements='str'),
        bond_mode=dict(type='str'),
        bond_name=dict(type='str'),
        bond_xmit_hash_policy=dict(type='str'),
        bridge=dict(type='str'),
        address=dict(type='str'),
        gateway=dict(type='str'),
        vlan_aware=dict(type='bool', default=False),
        pin_nics=dict(type='bool', default=False),
        allow_refusal=dict(type='bool', default=False),
    )
    argument_spec.update(pt.COMMON_ARGS)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_if=[('state', 'present', ('vm', 'gpus'))])
    if module.params['state'] == 'present':
        present(module)
    else:
        absent(module)


if __name__ == '__main__':
    main()
