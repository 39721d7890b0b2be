#!/usr/bin/env bash
# make setup: packages (apt), then the cached heavy inputs. Idempotent.
set -euo pipefail
here=$(dirname "$0")
"$here/setup-apt.sh"
"$here/setup-sources.sh"
# The own-VM test's Debian 12 disk image (Documentation/own-vm.rst).
"$here/debian-image.sh" >/dev/null
