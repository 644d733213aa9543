#!/usr/bin/env bash
# Fails when a program of ours calls a C++ standard library function that is not libstdc++'s own.
#
# PyTorch's LibTorch builds (the pip wheel's lib/, the official downloads) carry parts of a newer
# libstdc++ and export them (~190 std::filesystem symbols in PyTorch 2.11's libtorch.so and
# libtorch_cpu.so). A program whose first DT_NEEDED is libtorch.so has its std:: calls bound to
# those copies; on an H200, std::filesystem::remove_all jumped to address 0 (issue 49). The fix is
# the link order (top-level CMakeLists.txt: libstdc++.so.6 is every target's first DT_NEEDED); this
# is the check that would have caught it.
#
# usage: check_std_bindings.sh LIBSTDCXX OBJECT...
#   LIBSTDCXX  the libstdc++.so.6 whose exported symbols count as "the standard library's"
#              (`g++ -print-file-name=libstdc++.so.6`)
#   OBJECT     a program or a shared library of ours. It is loaded by the dynamic linker as `ldd -r`
#              does (LD_TRACE_LOADED_OBJECTS=1 LD_WARN=yes LD_BIND_NOW=1, with LD_DEBUG=bindings):
#              every symbol it imports is bound and the linker says where, and nothing of it runs.
# Fails (exit 1) when any symbol that LIBSTDCXX defines is bound, for OBJECT, to an object other
# than a libstdc++.so.6 (or OBJECT itself), and lists those bindings. An object for which the
# linker printed no binding is an error (exit 2): nothing was checked.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 LIBSTDCXX OBJECT..." >&2
  exit 2
fi
libstdcxx=$1
shift
if [ ! -f "$libstdcxx" ]; then
  echo "check_std_bindings: '$libstdcxx' is not a file (pass g++ -print-file-name=libstdc++.so.6)" >&2
  exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hsm_bindings.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$libstdcxx" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u > "$tmp/std_symbols"
if [ ! -s "$tmp/std_symbols" ]; then
  echo "check_std_bindings: nm found no defined dynamic symbol in '$libstdcxx'" >&2
  exit 2
fi
# The dynamic linker that loads a shared library as if it were a program (as ldd does).
interp=$(readelf -l /bin/sh 2> /dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
[ -x "$interp" ] || interp=/lib64/ld-linux-x86-64.so.2

status=0
for object in "$@"; do
  if [ ! -f "$object" ]; then
    echo "check_std_bindings: '$object' is not a file" >&2
    status=2
    continue
  fi
  rm -f "$tmp"/ld.*
  # (Through env: these variables must reach the dynamic linker, not timeout, a program too.)
  timeout 60 env LD_TRACE_LOADED_OBJECTS=1 LD_WARN=yes LD_BIND_NOW=1 LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/ld" \
    "$interp" "$object" > /dev/null 2>&1 < /dev/null
  # "binding file <object> [0] to <definer> [0]: normal symbol `name' [VERSION]", the object's own only.
  # (grep -F first: the linker's log is ~30 MB for a program linked to LibTorch, and a fixed-string
  # filter down to this object's own lines makes the check ~6x faster than the regular expression alone.)
  cat "$tmp"/ld.* 2> /dev/null | grep -F "binding file $object " |
    sed -n 's/^[[:space:]]*[0-9]*:[[:space:]]*binding file \(.*\) \[[0-9]*\] to \(.*\) \[[0-9]*\]: [a-z]* symbol `\([^'"'"']*\)'"'"'.*$/\1\t\2\t\3/p' |
    awk -F'\t' -v o="$object" '$1 == o' > "$tmp/bindings"
  if [ ! -s "$tmp/bindings" ]; then
    echo "check_std_bindings: the dynamic linker printed no binding for '$object' (does it load?)" >&2
    status=2
    continue
  fi
  # Bindings of standard-library symbols to anything but a libstdc++.so.6 or the object itself.
  awk -F'\t' 'NR == FNR { std[$1] = 1; next } ($3 in std)' "$tmp/std_symbols" "$tmp/bindings" > "$tmp/std"
  awk -F'\t' '$2 !~ /(^|\/)libstdc\+\+\.so\.6$/ && $2 != $1' "$tmp/std" > "$tmp/bad"
  n_std=$(wc -l < "$tmp/std")
  if [ -s "$tmp/bad" ]; then
    n=$(wc -l < "$tmp/bad")
    echo "FAIL: $object: $n of its $n_std C++ standard library symbols bind to a copy outside libstdc++.so.6" \
         "(link libstdc++ first: see the top-level CMakeLists.txt):"
    head -20 "$tmp/bad" | while IFS=$'\t' read -r _ to sym; do
      echo "  $(echo "$sym" | c++filt)  ->  $to"
    done
    [ "$n" -gt 20 ] && echo "  ... and $((n - 20)) more"
    status=1
  else
    echo "OK: $object: all $n_std of its C++ standard library symbols bind to libstdc++.so.6"
  fi
done
exit $status
