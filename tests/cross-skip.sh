#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Stands in for a script test in a cross build (tools/cross/): the script would run the
# build's binaries here, where they cannot run. They are tested in a VM guest of their own
# architecture instead (meson test --suite vm-arm64).
echo "SKIP: a cross build's binaries do not run on this machine (the VM tests run them in a guest of their architecture)"
exit 77
