#!/usr/bin/env bash
# Builds the portable wheels (abi3: one wheel per platform serves CPython >= 3.9) and the sdist
# into dist/, then checks with auditwheel that each Linux wheel carries a manylinux tag pip
# accepts on old distributions.
#
# zig is the linker: it links against glibc 2.17's symbol versions whatever glibc this machine
# has, so the wheel is manylinux_2_17 (a plain build here needs the host's glibc 2.34/2.35).
# aarch64 is built when its Rust target is installed or installable (CI builds it otherwise);
# `--host` builds only this machine's wheel (tests/test_wheel.py uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q "maturin>=1.7,<2" "ziglang>=0.13" "auditwheel>=6"
# maturin finds zig through `python3 -m ziglang` of the environment first on PATH.
export PATH="$PWD/.venv/bin:$PATH"
TAG=manylinux_2_17
rm -rf dist
mkdir -p dist
# The editable install's extension (python/rumus/_rumus*.so, built for this machine) would ride
# into the wheels as a python-source file, in place of the one built for the wheel's target:
# keep it aside meanwhile.
aside=$(mktemp -d)
shopt -s nullglob
dev_ext=(python/rumus/_rumus*.so python/rumus/_rumus*.pyd)
shopt -u nullglob
[ ${#dev_ext[@]} -eq 0 ] || mv "${dev_ext[@]}" "$aside"/
trap 'mv "$aside"/* python/rumus/ 2>/dev/null; rmdir "$aside"' EXIT

# With --zig maturin always passes --target, so each wheel builds in target/<triple>/release.
targets=("$(rustc -vV | sed -n 's/^host: //p')")
if [ "${1:-}" = "--host" ] || [ "${targets[0]}" = aarch64-unknown-linux-gnu ]; then
    :
elif rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu \
    || rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1; then
    targets+=("aarch64-unknown-linux-gnu")
else
    echo "build_wheels: skipping aarch64 (the Rust target aarch64-unknown-linux-gnu cannot be" \
        "installed here; the wheels workflow builds it in CI)" >&2
fi

for target in "${targets[@]}"; do
    start=$SECONDS
    maturin build --release --zig --compatibility "$TAG" --target "$target" --out dist -q
    echo "build_wheels: $target wheel built in $((SECONDS - start)) s"
done
maturin sdist --out dist

status=0
for whl in dist/*.whl; do
    report=$(auditwheel show "$whl")
    echo "$report"
    # auditwheel names the most portable policy the wheel's symbols allow (its text wraps); a
    # wheel whose extension is for another architecture gets no tag and fails here too.
    if ! tr -s '\n ' '  ' <<<"$report" \
        | grep -Eq 'consistent with the following platform tag: "manylinux_2_(17|28)_'; then
        echo "build_wheels: $whl is not portable (needs manylinux_2_17 or manylinux_2_28)" >&2
        status=1
    fi
done
ls -l dist
exit $status
