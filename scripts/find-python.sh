#!/usr/bin/env sh
# Print the path of a Python >= 3.12 on this machine (WalkerLab needs it: see pyproject.toml).
for candidate in python3.12 python3.13 python3 \
    "$HOME"/.pyenv/versions/3.12*/bin/python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python3.13 \
    /usr/local/bin/python3.12 /usr/bin/python3.12; do
  if "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
    command -v "$candidate" 2>/dev/null || echo "$candidate"
    exit 0
  fi
done
echo "WalkerLab needs Python 3.12 or newer; none was found (install python3.12)." >&2
exit 1
