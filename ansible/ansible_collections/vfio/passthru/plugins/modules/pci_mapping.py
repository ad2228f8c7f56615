#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: passthru developers
# GNU General Public License v2.0 or later (see https://www.gnu.org/licenses/old-licenses/gpl-2.0.txt)
# SPDX-License-Identifier: GPL-2.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pci_mapping
short_description: Build the Proxmox VE cluster PCI mapping from every node's passthru scan
version_added: 0.1.0
description:
  - Writes the GPU mappings of C(/etc/pve/mapping/pci.cfg) (Proxmox VE 8 and later) from the facts
    M(vfio.passthru.passthru_facts) gathered on every node, so that the file agrees with what each node
    really has - its slot, vendor:device id, subsystem id and IOMMU group.
  - The user's grouping decides the ids - each node names a mapping and selects its cards as
    C(passthru --gpus) does (C(all), scan indexes or slots, in scan order). The node's first card goes
    into mapping I(mapping), its second into I(mapping)C(-1), and so on - the ids
    C(passthru --mapping) uses for a VM's C(hostpci0), C(hostpci1), ...; nodes that name the same
    mapping share its ids, one C(map) line per node, so a VM can move between them.
  - Only the mappings it builds are touched; every other section of the file stays byte for byte.
    Run it once for the cluster (C(run_once)), on any node - C(/etc/pve) is the cluster file system.
  - Cards whose IOMMU group passthru does not call C(clean) are left out (returned in C(left_out)),
    unless I(include_unsafe) is set.
options:
  nodes:
    description:
      - One entry per node, usually built from each host's C(ansible_facts.passthru).
    type: list
    elements: dict
    required: true
    suboptions:
      node:
        description:
          - The node's Proxmox VE name (C(ansible_facts.passthru.node)).
        type: str
        required: true
      gpus:
        description:
          - The node's GPUs as M(vfio.passthru.passthru_facts) returns them (C(ansible_facts.passthru.gpus)).
        type: list
        elements: dict
        required: true
      mapping:
        description:
          - The mapping id for the node's first selected card; the Nth further card gets C(-N) appended.
        type: str
        required: true
      select:
        description:
          - Which cards, as C(passthru --gpus) takes them.
        type: list
        elements: str
        default: [all]
  state:
    description:
      - C(present) writes the mappings; C(absent) removes them (and the file, when nothing else is left in it).
    type: str
    choices: [present, absent]
    default: present
  include_unsafe:
    description:
      - Also map cards whose IOMMU group is shared with other devices or unknown.
    type: bool
    default: false
  root:
    description:
      - The host tree that holds the file, as passthru's C(--root).
    type: path
    default: /
  path:
    description:
      - The mapping file below I(root).
    type: str
    default: /etc/pve/mapping/pci.cfg
notes:
  - Several C(map) lines of one node in one mapping are alternatives to Proxmox VE; this module writes one
    per node and mapping, the card the user's selection puts in that place.
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
- name: One cluster mapping from every node's scan
  vfio.passthru.pci_mapping:
    nodes: "{{ ansible_play_hosts | map('extract', hostvars, 'passthru_node') | list }}"
  run_once: true
'''

RETURN = r'''
mappings:
  description: The mappings built, id to its C(map) values.
  returned: always
  type: dict
  sample: {"rtx": ["id=10de:1e07,node=gpu1,path=0000:01:00,iommugroup=12,subsystem-id=1458:37a9"]}
left_out:
  description: The cards left out, each with its node, slot and the reason.
  returned: always
  type: list
  elements: dict
warnings_mixed:
  description: Mappings whose nodes have different GPU models.
  returned: always
  type: list
  elements: str
'''

import os
import re
import tempfile

from ansible.module_utils.basic import AnsibleModule

CONFIG_ID = re.compile(r'^[a-z][a-z0-9_-]+$', re.IGNORECASE)
SLOT = re.compile(r'^(?:([0-9a-f]{4}):)?([0-9a-f]{2}):([0-9a-f]{2})(?:\.([0-7]))?$', re.IGNORECASE)


class SelectionError(Exception):
    pass


def mapping_id(name, index):
    return name if index == 0 else '%s-%d' % (name, index)


def card_for(gpus, token):
    if token.isdigit():
        index = int(token)
        if index >= len(gpus):
            raise SelectionError('there is no GPU %s (the scan numbers them 0 to %d)' % (token, len(gpus) - 1))
        return gpus[index]
    match = SLOT.match(token)
    if not match:
        raise SelectionError("'%s' is neither an index, a slot address nor 'all'" % token)
    slot = '%s:%s:%s' % ((match.group(1) or '0000').lower(), match.group(2).lower(), match.group(3).lower())
    for gpu in gpus:
        if gpu.get('slot') == slot:
            return gpu
    raise SelectionError('no display-class card at %s' % token)


def select(gpus, tokens):
    """The cards of a --gpus selection, in scan order (as passthru's plan selects them)."""
    tokens = [t.strip() for t in tokens if t.strip()]
    if tokens == ['all']:
        return [g for g in gpus if g.get('nvidia')]
    if 'all' in tokens:
        raise SelectionError('all cannot be combined with other cards')
    chosen = set(id(card_for(gpus, t)) for t in tokens)
    return [g for g in gpus if id(g) in chosen]


def map_value(node, gpu):
    """One map value, keys in the order Proxmox VE writes them (required, then optional, each sorted)."""
    value = 'id=%s,node=%s,path=%s' % (gpu['id'], node, gpu['slot'])
    if gpu.get('iommu_group') is not None:
        value += ',iommugroup=%d' % int(gpu['iommu_group'])
    if gpu.get('subsystem_id'):
        value += ',subsystem-id=%s' % gpu['subsystem_id']
    return value


def build(module):
    mappings, names, skipped, mixed = {}, {}, [], []
    for entry in module.params['nodes']:
        node = entry['node']
        if not CONFIG_ID.match(entry['mapping'] or ''):
            module.fail_json(msg="mapping '%s' of node %s is not a valid mapping id" % (entry['mapping'], node))
        try:
            cards = select(entry['gpus'], entry['select'])
        except SelectionError as exc:
            module.fail_json(msg='node %s: select: %s' % (node, exc))
        index = 0
        for gpu in cards:
            if gpu.get('isolation') != 'clean' and not module.params['include_unsafe']:
                skipped.append(dict(node=node, slot=gpu.get('slot'),
                                    reason='IOMMU group isolation is %s' % gpu.get('isolation')))
                continue
            if not gpu.get('id'):
                module.fail_json(msg='node %s: the vendor:device id of %s is unknown' % (node, gpu.get('slot')))
            ident = mapping_id(entry['mapping'], index)
            index += 1
            values = mappings.setdefault(ident, [])
            if any(v.split('node=')[1].split(',')[0] == node for v in values):
                module.fail_json(msg='mapping %s names node %s twice: give the node another mapping id' % (ident, node))
            if values and values[0].split(',')[0] != 'id=' + gpu['id']:
                mixed.append('%s: node %s has a %s, another node a %s' % (ident, node, gpu['id'], values[0].split(',')[0][3:]))
            values.append(map_value(node, gpu))
            names.setdefault(ident, gpu.get('name') or gpu['id'])
    return mappings, names, skipped, mixed


def split_sections(text):
    """[(id or None, [lines])]: each section's header, property lines and the blank line after it."""
    parts, current = [], None
    for line in text.splitlines(True):
        if current is not None and line.strip() and line[0] in ' \t':
            current[1].append(line)
            continue
        if current is not None and not line.strip():
            current[1].append(line)
            current = None
            continue
        if line.strip() and not line.startswith('#') and line[0] not in ' \t':
            current = (line.strip(), [line])
            parts.append(current)
            continue
        current = None
        parts.append((None, [line]))
    return parts


def section_text(ident, values, name):
    lines = [ident + '\n'] + ['\tmap %s\n' % v for v in values]
    lines.append('\tdescription %s, from passthru scan (vfio.passthru.pci_mapping)\n' % name)
    return ''.join(lines) + '\n'


def edit(before, mappings, names, present):
    parts = split_sections(before)
    done, out = set(), []
    for ident, lines in parts:
        if ident in mappings:
            if present and ident not in done:
                out.append(section_text(ident, mappings[ident], names[ident]))
            done.add(ident)
            continue
        out.append(''.join(lines))
    text = ''.join(out)
    if present:
        for ident in sorted(set(mappings) - done):
            if text and not text.endswith('\n'):
                text += '\n'
            if text and not text.endswith('\n\n'):
                text += '\n'
            text += section_text(ident, mappings[ident], names[ident])
    return text


def write(module, path, text, exists):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix='.pci.cfg.', dir=directory)
    with os.fdopen(fd, 'w') as handle:
        handle.write(text)
    if not exists:
        os.chmod(tmp, 0o640)  # pmxcfs shows every file as 0640
    module.atomic_move(tmp, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type='list', elements='dict', required=True, options=dict(
                node=dict(type='str', required=True),
                gpus=dict(type='list', elements='dict', required=True),
                mapping=dict(type='str', required=True),
                select=dict(type='list', elements='str', default=['all']),
            )),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            include_unsafe=dict(type='bool', default=False),
            root=dict(type='path', default='/'),
            path=dict(type='str', default='/etc/pve/mapping/pci.cfg'),
        ),
        supports_check_mode=True,
    )
    path = os.path.join(module.params['root'], module.params['path'].lstrip('/'))
    mappings, names, skipped, mixed = build(module)
    exists = os.path.exists(path)
    before = ''
    if exists:
        with open(path) as handle:
            before = handle.read()
    present = module.params['state'] == 'present'
    after = edit(before, mappings, names, present)
    remove = not present and exists and after != before and not after.strip()
    changed = after != before if (present or not remove) else True
    result = dict(changed=changed, mappings=mappings, left_out=skipped, warnings_mixed=mixed, path=path)
    if module._diff:
        result['diff'] = dict(before=before, after='' if remove else after, before_header=path, after_header=path)
    if changed and not module.check_mode:
        if remove:
            os.unlink(path)
        else:
            write(module, path, after, exists)
    for line in mixed:
        module.warn('mapping ' + line + ': a VM moved between them sees a different GPU model')
    module.exit_json(**result)


if __name__ == '__main__':
    main()
