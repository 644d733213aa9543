#!/usr/bin/env bash
# The binding check (cmake/check_std_bindings.sh) catches issue 49's crash: a tiny program that
# calls std::filesystem::remove_all, linked against a library exporting its own aborting copy of it
# (fake_std.cpp, as PyTorch's libtorch.so exports its libstdc++ copies),
#   - the wrong way (the library before libstdc++.so.6 among DT_NEEDED, as a LibTorch program gets
#     by default): the check fails, and the program aborts in the fake copy;
#   - the fixed way (libstdc++.so.6 first, as our CMakeLists.txt links every target): the check
#     passes, and remove_all removes a folder tree.
# usage: std_binding_selftest.sh CXX CHECK_SCRIPT LIBSTDCXX SOURCE_DIR
set -u
cxx=$1 check=$(readlink -f "$2") libstdcxx=$3
src=$(cd "$4" && pwd) || exit 1
work=$(mktemp -d "${TMPDIR:-/tmp}/hsm_binding_selftest.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$cxx" -O1 -fPIC -shared -o libfake_std.so "$src/fake_std.cpp" || fail "cannot build the fake library"
"$cxx" -std=c++17 -O1 -c -o remove_tree.o "$src/remove_tree.cpp" || fail "cannot compile remove_tree.cpp"
# --no-as-needed around the fake library: it must stay a DT_NEEDED in both programs, as LibTorch does.
"$cxx" -o wrong remove_tree.o -L. -Wl,--no-as-needed -lfake_std -Wl,-rpath,"$work" || fail "cannot link 'wrong'"
"$cxx" -Wl,--push-state,--no-as-needed -lstdc++ -Wl,--pop-state -o fixed remove_tree.o \
  -L. -Wl,--no-as-needed -lfake_std -Wl,-rpath,"$work" || fail "cannot link 'fixed'"

echo "== the wrong link order"
bash "$check" "$libstdcxx" ./wrong
rc=$?
[ $rc -eq 1 ] || fail "the check did not flag the program linked the wrong way (exit $rc, expected 1)"
mkdir -p tree/a/b && touch tree/a/b/file
./wrong tree > /dev/null 2>&1 && fail "the wrongly linked program did not call the fake remove_all (the fake is inert)"

echo "== the fixed link order"
bash "$check" "$libstdcxx" ./fixed || fail "the check flagged the program linked libstdc++ first"
./fixed tree || fail "the fixed program's remove_all failed"
[ -e tree ] && fail "the fixed program left the folder"
echo "PASS: the check flags the wrong order and passes the fixed one; the fixed program's remove_all works"
