# -*- coding: utf-8 -*-
# Copyright: passthru developers
# GNU General Public License v2.0 or later (see https://www.gnu.org/licenses/old-licenses/gpl-2.0.txt)
# SPDX-License-Identifier: GPL-2.0-or-later
"""Running the passthru binary on the managed node, shared by the collection's modules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

# passthru's documented exit codes (passthru(1), EXIT STATUS).
EXIT_OK = 0
EXIT_REFUSED = 3

# The options every module that runs passthru takes.
COMMON_ARGS = dict(
    root=dict(type='path', default='/'),
    binary=dict(type='path', default='passthru'),
    data_dir=dict(type='path'),
)


def base_argv(module):
    """passthru with the global options: the root, the data directory, no colour."""
    binary = module.params['binary']
    if '/' not in binary:
        binary = module.get_bin_path(binary, required=True)
    argv = [binary, '--root', module.params['root'], '--color', 'never']
    if module.params.get('data_dir'):
        argv += ['--data-dir', module.params['data_dir']]
    return argv


def run(module, args):
    """Runs passthru ARGS; returns (rc, stdout, stderr). Never fails the module itself."""
    return module.run_command(base_argv(module) + list(args), environ_update=dict(LC_ALL='C', NO_COLOR='1'))


def error_line(stderr):
    """passthru's one-line error ('passthru: error: ...'), else the last line of stderr."""
    lines = [line for line in (stderr or '').splitlines() if line.strip()]
    for line in lines:
        if line.startswith('passthru: error: '):
            return line
    return lines[-1] if lines else ''


def hints(stderr):
    """The 'hint: ...' lines passthru prints after an error: what to do instead."""
    return [line[len('hint: '):] for line in (stderr or '').splitlines() if line.startswith('hint: ')]


def fail(module, what, rc, stdout, stderr, **extra):
    """Fails the task with passthru's own error line in msg and its exit code in rc."""
    line = error_line(stderr) or '%s exited with %d' % (what, rc)
    module.fail_json(msg=line, rc=rc, stdout=stdout, stderr=stderr, hints=hints(stderr), **extra)


def run_json(module, args, what):
    """Runs passthru ARGS that print one JSON document; fails the task on any error."""
    rc, out, err = run(module, args)
    if rc != EXIT_OK:
        fail(module, what, rc, out, err)
    try:
        return json.loads(out)
    except ValueError as exc:
        module.fail_json(msg='%s did not print JSON: %s' % (what, exc), rc=rc, stdout=out, stderr=err)
    return None


def plan_diff(plan):
    """Ansible's diff list: one before/after pair per file of a passthru plan."""
    diffs = []
    for f in plan.get('files', []):
        diffs.append(dict(before=f.get('before') or '', after=f.get('content') or '',
                          before_header='%s (%s)' % (f['path'], 'absent' if f.get('before') is None else 'before'),
                          after_header='%s (%s)' % (f['path'], 'absent' if f.get('content') is None else f['action'])))
    return diffs


def generation_of(stdout):
    """The generation number apply or rollback reports, else None."""
    for line in stdout.splitlines():
        if line.startswith('Applied as generation ') or line.startswith('Rolled back as generation '):
            number = line.split()[3].rstrip(':.,')
            if number.isdigit():
                return int(number)
    return None


def node_name(hostname_text):
    """This node's name as Proxmox VE sees it: the host name up to the first dot."""
    for line in (hostname_text or '').splitlines():
        name = line.strip()
        if name and not name.startswith('#'):
            return name.split('.')[0] or None
    return None
