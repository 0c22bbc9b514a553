#!/usr/bin/env bash
# Prints the path of a working Python X.Y interpreter (for make test-oldest / test-latest): python X.Y on the PATH
# when it runs, else one of pyenv's installed versions (whose shims run only the active version).
set -euo pipefail
want=${1:?usage: find-python.sh X.Y}
if "python$want" -c '' >/dev/null 2>&1; then
  command -v "python$want"
  exit 0
fi
root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
for candidate in $(ls -d "$root"/versions/"$want".* 2>/dev/null | sort -V -r); do
  if "$candidate/bin/python$want" -c '' >/dev/null 2>&1; then
    echo "$candidate/bin/python$want"
    exit 0
  fi
done
echo "find-python.sh: no Python $want here; install it (e.g. pyenv install $want) or pass the interpreter's path" >&2
exit 1
