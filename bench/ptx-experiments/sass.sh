#!/bin/bash
# The SASS of one kernel of a cubin, one instruction a line (encodings dropped).
# Usage: NVDISASM=/path/to/nvdisasm sass.sh FILE.cubin KERNEL
"${NVDISASM:-nvdisasm}" -c "$1" | awk -v f="$2" '
  /^[ \t]*\.text\./ { on = ($0 ~ "\\.text\\." f ":"); next }
  on' | grep -E "^\s+/\*[0-9a-f]{4}\*/|^\.L" | sed -E 's@ */\* 0x[0-9a-f]+ \*/@@; s/ +;/;/'
