#!/usr/bin/env bash
# Build a mypyc-compiled copy of src/ for MEASUREMENT ONLY (issue 32's mypyc experiment, docs/benchmark-history.md).
# It never writes into the worktree: it copies src/ and pyproject.toml (mypy's config) to DEST and compiles there,
# so `PYTHONPATH=DEST/src` runs the compiled variant and the checkout stays pure Python.
#
#   tools/build_mypyc_variant.sh /tmp/evalglass-mypyc [module.py ...]   # default: the per-trajectory hot modules
#
# Needs mypy (which ships mypyc) and a C compiler. One source edit is applied to the copy: mypyc 2.4 fails with an
# internal error on `reversed()` of a list[Any] (core/trajectory.py), so the copy iterates `[::-1]` instead (same order);
# and its C for a class based on pydantic's BaseModel names the module `pydantic.main` without declaring it unless the
# module imports it, so each compiled module importing from pydantic gets `import pydantic.main` in the copy.
set -euo pipefail
dest=${1:?usage: $0 DEST [module.py ...]}
shift || true
here=$(cd "$(dirname "$0")/.." && pwd)
modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
    modules=(evalglass/core/trajectory.py evalglass/metrics/callmatch.py evalglass/metrics/toolcalls.py)
fi
rm -rf "$dest"
mkdir -p "$dest"
cp -r "$here/src" "$dest/src"
cp "$here/pyproject.toml" "$dest/src/pyproject.toml"
find "$dest/src" -name __pycache__ -prune -exec rm -rf {} +
sed -i 's/for call_id in reversed(last_ids):/for call_id in last_ids[::-1]:/' "$dest/src/evalglass/core/trajectory.py"
cd "$dest/src"
for module in "${modules[@]}"; do
    if grep -q '^from pydantic import' "$module"; then
        sed -i '0,/^from pydantic import/s//import pydantic.main\nfrom pydantic import/' "$module"
    fi
done
# setuptools reads the copied pyproject's package-dir and fails to copy the shared library in place: copy them here.
time "${PYTHON:-python}" -m mypyc "${modules[@]}" || true
cp -r build/lib.*/* .
ls ./*__mypyc*.so
