# SPDX-License-Identifier: GPL-2.0-or-later
# The ansible_playbook.sh test's record of a run: every task's result per host, written as one
# JSON document to $PASSTHRU_ANSIBLE_RESULTS when the run ends ({"plays": [{"tasks": [{"task":
# {"name"}, "hosts": {HOST: RESULT}}]}], "stats": {HOST: {...}}}). Debian's ansible-core has no
# json stdout callback (that one lives in the ansible.posix collection), hence this one.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = '''
    name: results_json
    type: aggregate
    short_description: every task result per host as JSON, for the test suite
    description: Writes the results to the file named by PASSTHRU_ANSIBLE_RESULTS.
'''

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'results_json'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.plays = []

    def v2_playbook_on_play_start(self, play):
        self.plays.append({'play': {'name': play.get_name()}, 'tasks': []})

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.plays[-1]['tasks'].append({'task': {'name': task.get_name()}, 'hosts': {}})

    def _record(self, result, **extra):
        entry = dict(result._result)
        entry.update(extra)
        self.plays[-1]['tasks'][-1]['hosts'][result._host.get_name()] = entry

    def v2_runner_on_ok(self, result, **kwargs):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, failed=True)

    def v2_runner_on_skipped(self, result):
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, unreachable=True)

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        doc = {'plays': self.plays, 'stats': dict((h, stats.summarize(h)) for h in hosts)}
        with open(os.environ['PASSTHRU_ANSIBLE_RESULTS'], 'w') as handle:
            json.dump(doc, handle, indent=1, default=str)
