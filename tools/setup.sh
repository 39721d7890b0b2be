#!/usr/bin/env bash
# make setup: packages (apt), then the cached heavy inputs. Idempotent.
set -euo pipefail
here=$(dirname "$0")
"$here/setup-apt.sh"
"$here/setup-sources.sh"
