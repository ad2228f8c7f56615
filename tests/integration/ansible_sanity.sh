#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ansible-test sanity for the collection vfio.passthru, offline, with Debian's ansible-core and
# the system Python (no containers, no virtual environments, no downloads).
#
# ansible-test runs every sanity test whose requirements it does not pin to PyPI versions
# (its _data/requirements/sanity.TEST.txt): compile, shebang, future-import-boilerplate, the
# code-smell tests ... For the pinned ones it would build a virtual environment and pip-install
# the pinned versions, which needs the network; it skips them here (--skip-test), and this test
# runs the same checkers ansible-test ships, with its own configuration, on Debian's tools:
#   validate-modules  validate.py --arg-spec (python3-voluptuous; imports each module and
#                     compares DOCUMENTATION with the argument spec), ignore file honoured
#   ansible-doc       ansible-doc -t module --json for each module (no error, no warning)
#   pep8              pycodestyle --max-line-length 160 with ansible-test's ignore list
#   pylint            Debian's pylint with ansible-test's collection.cfg and its plugins
#   yamllint          ansible-test's yamllinter.py (Debian's yamllint), YAML and DOCUMENTATION
#   runtime-metadata  ansible-test's runtime-metadata.py on meta/runtime.yml
#   changelog         not run: the collection keeps no changelogs/ fragments (antsibull-changelog
#                     is not in Debian 12)
#   import            not run on its own: validate-modules --arg-spec imports every module
#                     through the collection loader and runs it up to its argument spec
source "$(dirname "$0")/lib.inc"
need ansible-test ansible-doc
PY=/usr/bin/python3
[[ -x $PY ]] || skip "no system Python at $PY"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin # the system Python, not another one first in PATH
ver=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')
core=$($PY -c 'import ansible.release as r; print(".".join(r.__version__.split(".")[:2]))')
AT=$($PY -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
SANITY=$AT/_util/controller/sanity
[[ -d $SANITY/validate-modules ]] || skip "ansible-test's sanity checkers are not at $SANITY"

# A copy, so what ansible-test writes below the collection (its output folder under
# the collection's tests/) stays out of the source tree.
COLL=$T/ansible_collections/vfio/passthru
mkdir -p "$(dirname "$COLL")"
cp -a "$SRC/ansible/ansible_collections/vfio/passthru" "$COLL"
rm -rf "$COLL/tests/output"
cd "$COLL"
MODULES=(plugins/modules/*.py)
PYFILES=("${MODULES[@]}" plugins/module_utils/*.py)

pinned=()
offline=()
for t in $(ansible-test sanity --list-tests 2> /dev/null); do
    if [[ -f $AT/_data/requirements/sanity.$t.txt ]]; then
        pinned+=("$t")
    else
        offline+=("$t")
    fi
done
((${#offline[@]} > 5)) || fail "ansible-test lists only ${#offline[@]} offline sanity tests: ${offline[*]}"
skips=()
for t in "${pinned[@]}"; do
    skips+=(--skip-test "$t")
done
if ansible-test sanity --python "$ver" "${skips[@]}" > "$T/ansible-test.out" 2>&1; then
    ok "ansible-test sanity --python $ver: ${offline[*]}"
else
    fail "ansible-test sanity: $(grep -v locale "$T/ansible-test.out" | tail -20)"
fi
echo "skipped in ansible-test (pinned PyPI requirements, run below with Debian's tools): ${pinned[*]}"

# validate-modules, minus the codes tests/sanity/ignore-X.Y.txt (X.Y: ansible-core) lists for a file.
export ANSIBLE_COLLECTIONS_PATH=$T
if PYTHONPATH=$SANITY/validate-modules $PY "$SANITY/validate-modules/validate.py" --format json --arg-spec \
    --collection ansible_collections/vfio/passthru --collection-version "$(sed -n 's/^version: //p' galaxy.yml)" \
    "${MODULES[@]}" > "$T/vm.json" 2> "$T/vm.err"; then :; fi
$PY - "$T/vm.json" "tests/sanity/ignore-$core.txt" > "$T/vm.out" <<'PYEOF' && [[ ! -s $T/vm.err ]] && ok "validate-modules: ${MODULES[*]}" || fail "validate-modules: $(cat "$T/vm.out" "$T/vm.err")"
import json, os, sys
ignored = set()
if os.path.exists(sys.argv[2]):
    for line in open(sys.argv[2]):
        path, code = line.split("#")[0].split()
        ignored.add((path, code.split(":", 1)[1]))
found = 0
for path, result in json.load(open(sys.argv[1])).items():
    for item in result["errors"] + result["warnings"] + result["traces"]:
        if (path, item.get("code")) not in ignored:
            print(path, item.get("code"), item.get("msg", item))
            found += 1
sys.exit(1 if found else 0)
PYEOF

for m in "${MODULES[@]}"; do
    name=$(basename "$m" .py)
    if ansible-doc -t module --json "vfio.passthru.$name" > "$T/doc.json" 2> "$T/doc.err" && [[ ! -s $T/doc.err ]]; then
        ok "ansible-doc vfio.passthru.$name"
    else
        fail "ansible-doc vfio.passthru.$name: $(cat "$T/doc.err")"
    fi
done

ignore=$(paste -sd, "$SANITY/pep8/current-ignore.txt")
$PY -m pycodestyle --max-line-length 160 --config /dev/null --ignore "$ignore" "${PYFILES[@]}" > "$T/pep8.out" 2>&1 &&
    ok "pep8" || fail "pep8: $(cat "$T/pep8.out")"

PYTHONPATH=$SANITY/pylint/plugins:$T ANSIBLE_TEST_MODULES_PATH=$COLL/plugins/modules/ \
    ANSIBLE_TEST_MODULE_UTILS_PATH=$COLL/plugins/module_utils/ PYLINTHOME=$T/pylint \
    $PY -m pylint --jobs 0 --reports n --max-line-length 160 --max-complexity 20 \
    --rcfile "$SANITY/pylint/config/collection.cfg" --output-format text \
    --load-plugins deprecated,pylint.extensions.mccabe,string_format,unwanted \
    --collection-name vfio.passthru "${PYFILES[@]}" > "$T/pylint.out" 2>&1 && ok "pylint" || fail "pylint: $(cat "$T/pylint.out")"

find . -path ./tests/output -prune -o \( -name '*.yml' -o -name '*.yaml' -o -name '*.py' \) -print | sed 's|^\./||' |
    $PY "$SANITY/yamllint/yamllinter.py" > "$T/yamllint.json" 2>&1 || fail "yamllint: $(cat "$T/yamllint.json")"
$PY -c 'import json, sys; m = json.load(open(sys.argv[1]))["messages"]; print(m); sys.exit(1 if m else 0)' "$T/yamllint.json" > "$T/yamllint.out" &&
    ok "yamllint" || fail "yamllint: $(cat "$T/yamllint.out")"

$PY "$SANITY/code-smell/runtime-metadata.py" meta/runtime.yml > "$T/runtime.out" 2>&1 && [[ ! -s $T/runtime.out ]] &&
    ok "runtime-metadata" || fail "runtime-metadata: $(cat "$T/runtime.out")"
finish "ansible_sanity: ansible-test sanity offline, and its pinned checkers with Debian's tools"
