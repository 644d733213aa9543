#!/usr/bin/env bash
# packaging/install-deps.sh chooses its package names by what the release has (issue 64): run
# against stand-ins for dpkg-query, apt-cache and apt-get that play a release, it must ask apt
# for that release's LLVM fuzzer runtime (never a version written for another release), and on
# a release without one of its packages it must say in one line which package and what to
# install instead, and install nothing.
# Usage: check_install_deps.sh SOURCE_DIR
set -euo pipefail
script="$1/packaging/install-deps.sh"
[ -f "$script" ] || { echo "no $script"; exit 1; }
W=$(mktemp -d /tmp/hsm_install_deps.XXXXXX)
trap 'rm -rf "$W"' EXIT
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# A fake machine: bin/ holds the stand-ins and the few real tools the script uses; nothing else
# is on PATH, so the machine's own clang, dpkg and apt are out of reach.
# play NAME CLANG_DEPENDS INSTALLED_CLANG_VERSION ABSENT...: a release whose `clang` package
# depends on CLANG_DEPENDS, with clang installed at that version (or "" for none), where every
# package is installable except ABSENT.
play() {
  local name=$1 depends=$2 have_clang=$3
  shift 3
  local m="$W/$name"
  mkdir -p "$m/bin"
  for t in bash sh sed grep head cat tr env; do ln -sf "$(command -v "$t")" "$m/bin/$t"; done
  printf '%s\n' "$@" >"$m/absent"
  : >"$m/apt-get.log"
  cat >"$m/bin/id" <<'EOF'
#!/bin/sh
echo 0
EOF
  cat >"$m/bin/dpkg-query" <<'EOF'
#!/bin/sh
exit 1
EOF
  cat >"$m/bin/apt-cache" <<EOF
#!/bin/sh
case "\$1" in
  depends) echo "clang"; echo "  Depends: $depends" ;;
  policy) if grep -qx "\$2" "$m/absent"; then echo "\$2:"; echo "  Installed: (none)"; echo "  Candidate: (none)";
          else echo "\$2:"; echo "  Installed: (none)"; echo "  Candidate: 1.0-1"; fi ;;
esac
EOF
  cat >"$m/bin/apt-get" <<EOF
#!/bin/sh
echo "\$*" >>"$m/apt-get.log"
EOF
  if [ -n "$have_clang" ]; then
    cat >"$m/bin/clang" <<EOF
#!/bin/sh
echo "Debian clang version $have_clang.0.6"
EOF
  fi
  chmod +x "$m/bin/"*
  out="$(cd "$m" && env -i PATH="$m/bin" HOME="$m" bash "$script" 2>&1)" && rc=0 || rc=$?
  installs="$(grep '^install' "$m/apt-get.log" || true)"
}

# Debian 13: clang is clang-19, and there is no LLVM 14.
play trixie clang-19 "" libfuzzer-14-dev libclang-rt-14-dev
[ "$rc" -eq 0 ] || fail "trixie: exit $rc: $out"
echo "$installs" | grep -qw libfuzzer-19-dev || fail "trixie: libfuzzer-19-dev not installed: $installs"
echo "$installs" | grep -qw libclang-rt-19-dev || fail "trixie: libclang-rt-19-dev not installed: $installs"
echo "$installs" | grep -q -- '-14-' && fail "trixie: a Debian 12 name asked for: $installs"
for p in file xvfb xauth qt6-base-dev libtorch-dev; do
  echo "$installs" | grep -qw "$p" || fail "trixie: $p not installed: $installs"
done

# Debian 12, clang 14 already installed: its version decides, not the lists.
play bookworm clang-99 14
[ "$rc" -eq 0 ] || fail "bookworm: exit $rc: $out"
echo "$installs" | grep -qw libfuzzer-14-dev || fail "bookworm: libfuzzer-14-dev not installed: $installs"

# A release without LibTorch: one line that names it and what to do, and nothing installed.
play unknown clang-21 "" libtorch-dev
[ "$rc" -ne 0 ] || fail "a release without libtorch-dev was accepted: $out"
[ -z "$installs" ] || fail "a release without libtorch-dev still installed: $installs"
line="$(echo "$out" | grep "'libtorch-dev'" || true)"
[ "$(echo "$line" | grep -c .)" -eq 1 ] || fail "no single line names libtorch-dev: $out"
echo "$line" | grep -q 'install instead: LibTorch' || fail "the line does not say what to install instead: $line"
echo "$installs" | grep -q libfuzzer-21-dev && fail "installed before checking every name"

[ "$failures" -eq 0 ] && { echo "install-deps: every release played passed"; exit 0; }
echo "install-deps: $failures check(s) failed"
exit 1
