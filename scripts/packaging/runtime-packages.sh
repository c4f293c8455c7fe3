#!/usr/bin/env bash
# Prints the Debian packages that provide the shared libraries the given ELF binaries load, one
# per line, sorted: what a runtime image must `apt-get install` to run them. Libraries that no
# package owns (e.g. built in the build tree) are printed as `file:<path>` lines instead, so the
# caller can copy them. Fails naming the library when one cannot be found at all.
#   scripts/packaging/runtime-packages.sh BINARY...
set -euo pipefail

[ $# -gt 0 ] || {
  echo "usage: $0 BINARY..." >&2
  exit 2
}

# The package owning a library path, trying the path as given and with/without the /usr prefix
# (bookworm is merged-/usr: ldd may print /lib/... while dpkg recorded /usr/lib/... or back).
owner_of() {
  local path="$1" real candidates=() c out
  real="$(readlink -f "$path")"
  candidates=("$path" "$real")
  for c in "$path" "$real"; do
    case "$c" in
      /usr/*) candidates+=("${c#/usr}") ;;
      *) candidates+=("/usr$c") ;;
    esac
  done
  for c in "${candidates[@]}"; do
    if out="$(dpkg-query -S "$c" 2>/dev/null)"; then
      # "libfoo1:amd64: /usr/lib/x86_64-linux-gnu/libfoo.so.1"; diversions print other lines.
      out="$(grep -v '^diversion by' <<<"$out" | head -n1)"
      out="${out%%: /*}"
      out="${out%%, *}"
      echo "${out%%:*}"
      return 0
    fi
  done
  return 1
}

declare -A packages=() files=()
for binary in "$@"; do
  [ -f "$binary" ] || {
    echo "runtime-packages: no such file: $binary" >&2
    exit 1
  }
  [ "$(head -c 4 "$binary" | od -An -c | tr -d ' ')" = '177ELF' ] || {
    echo "runtime-packages: not an ELF binary: $binary" >&2
    exit 1
  }
  # `ldd` lines: "libfoo.so.1 => /path/libfoo.so.1 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)",
  # "linux-vdso.so.1 (0x...)", or "libbar.so.2 => not found".
  while read -r line; do
    case "$line" in
      *"=> not found"*)
        echo "runtime-packages: $binary needs ${line%% *}, which is not installed" >&2
        exit 1
        ;;
      *"=> /"*) lib="${line#*=> }" ;;
      /*) lib="$line" ;;
      *) continue ;; # linux-vdso and statically linked markers
    esac
    lib="${lib%% (*}"
    if pkg="$(owner_of "$lib")"; then
      packages["$pkg"]=1
    else
      files["$(readlink -f "$lib")"]=1
    fi
  done < <(ldd "$binary" 2>/dev/null || true)
done

for pkg in "${!packages[@]}"; do echo "$pkg"; done | sort
for f in "${!files[@]}"; do echo "file:$f"; done | sort
