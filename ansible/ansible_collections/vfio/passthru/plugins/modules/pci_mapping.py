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
  - Has passthru write the GPU mappings of C(/etc/pve/mapping/pci.cfg) (Proxmox VE 8 and later) from the
    scans M(vfio.passthru.passthru_facts) gathered on every node -
    C(passthru plan --mapping NAME --gpus SPEC --node-scan NODE=FILE ...), then C(passthru apply).
  - passthru decides everything - which cards C(--gpus) selects, whether their IOMMU groups may go, the
    mapping ids (the node's first card I(mapping), its second I(mapping)C(-1), ...) and the edit of the file,
    which is a journaled generation on the node the task runs on (C(passthru history), C(passthru rollback)).
    They are the cards and ids C(passthru plan --vm VMID --gpus SPEC --mapping NAME) uses on each node.
  - Nodes with the same I(mapping) and I(gpus) go into one passthru run, one generation. A run passthru
    refuses (exit 3 - a node's cards cannot go, a mapping id already names other cards) changes nothing and
    is returned in C(refused); the other runs go on.
  - Run it once for the cluster (C(run_once)), on any node - C(/etc/pve) is the cluster file system. To undo
    it, roll that node back (M(vfio.passthru.passthru) with I(state=absent), or C(passthru rollback)).
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
      scan:
        description:
          - The node's C(passthru scan --json) document (C(ansible_facts.passthru.scan)).
        type: dict
        required: true
      mapping:
        description:
          - The mapping name, as C(passthru --mapping) takes it.
        type: str
        required: true
      gpus:
        description:
          - Which cards, as C(passthru --gpus) takes them.
        type: list
        elements: str
        default: [all]
  root:
    description:
      - The host tree passthru works on (its C(--root)).
    type: path
    default: /
  binary:
    description:
      - The passthru program.
    type: path
    default: passthru
  data_dir:
    description:
      - passthru's C(--data-dir).
    type: path
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
runs:
  description: One passthru run per mapping and selection - the mapping, the nodes, passthru's plan and the generation applied.
  returned: always
  type: list
  elements: dict
refused:
  description: The runs passthru refused, each with its mapping, nodes, passthru's error line and hints.
  returned: always
  type: list
  elements: dict
generations:
  description: The generations applied, oldest first.
  returned: always
  type: list
  elements: int
'''

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.vfio.passthru.plugins.module_utils import passthru as pt


def groups_of(nodes):
    """The nodes in runs of the same mapping and selection, in the order first given."""
    runs = []
    for entry in nodes:
        key = (entry['mapping'], ','.join(entry['gpus']))
        for run in runs:
            if run['key'] == key:
                run['nodes'].append(entry)
                break
        else:
            runs.append(dict(key=key, nodes=[entry]))
    return runs


def plan_argv(workdir, run, plan_file):
    mapping, gpus = run['key']
    argv = ['plan', '--json', '--out', plan_file, '--mapping', mapping, '--gpus', gpus]
    for index, entry in enumerate(run['nodes']):
        path = os.path.join(workdir, 'scan-%d.json' % index)
        with open(path, 'w') as handle:
            json.dump(entry['scan'], handle)
        argv += ['--node-scan', '%s=%s' % (entry['node'], path)]
    return argv


def one_run(module, run, result):
    """Plans and applies one run; its outcome into RESULT."""
    workdir = tempfile.mkdtemp(prefix='passthru-map-', dir=module.tmpdir)
    plan_file = os.path.join(workdir, 'plan.json')
    nodes = [entry['node'] for entry in run['nodes']]
    rc, out, err = pt.run(module, plan_argv(workdir, run, plan_file))
    if rc == pt.EXIT_REFUSED:
        result['refused'].append(dict(mapping=run['key'][0], nodes=nodes, msg=pt.error_line(err), hints=pt.hints(err), rc=rc))
        return
    try:
        plan = json.loads(out) if rc == pt.EXIT_OK else None
    except ValueError:
        plan = None
    if plan is None:
        pt.fail(module, 'passthru plan', rc, out, err, **result)
    done = dict(mapping=run['key'][0], nodes=nodes, plan=plan, generation=None)
    result['runs'].append(done)
    if not plan.get('files'):
        return
    result['changed'] = True
    result['diff'].extend(pt.plan_diff(plan))
    step = ['apply', '--dry-run', '--plan', plan_file] if module.check_mode else ['apply', '--yes', '--plan', plan_file]
    rc, out, err = pt.run(module, step)
    if rc != pt.EXIT_OK:
        pt.fail(module, 'passthru ' + ' '.join(step[:2]), rc, out, err, **result)
    if not module.check_mode:
        done['generation'] = pt.generation_of(out)
        result['generations'].append(done['generation'])


def main():
    argument_spec = dict(
        nodes=dict(type='list', elements='dict', required=True, options=dict(
            node=dict(type='str', required=True),
            scan=dict(type='dict', required=True),
            mapping=dict(type='str', required=True),
            gpus=dict(type='list', elements='str', default=['all']),
        )),
    )
    argument_spec.update(pt.COMMON_ARGS)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    result = dict(changed=False, runs=[], refused=[], generations=[], diff=[])
    for run in groups_of(module.params['nodes']):
        one_run(module, run, result)
    if not module._diff:
        result.pop('diff')
    for refusal in result['refused']:
        module.warn('passthru refused mapping %s (%s): %s' % (refusal['mapping'], ', '.join(refusal['nodes']), refusal['msg']))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
