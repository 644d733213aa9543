#!/usr/bin/env bash
# Makes the folder bench/gpu_check.sh carries to a GPU machine (where nothing can be installed or
# downloaded): the Debian 12 .debs its build needs, fetched here with `apt-get download`, and the
# TinyStories sample as data/tinystories-sample.txt. Run on a Debian 12 machine with apt (this one).
#
#   bench/gpu_debs.sh [--out DIR] [--data FILE]
#     --out   the folder to make (default .gpu-debs); an existing one must be this script's own
#     --data  the corpus (default ../shared/data/tinystories/tinystories-sample.txt)
#
# Then, on the GPU machine: bench/gpu_check.sh --debs DIR (the default is .gpu-debs as well).
set -euo pipefail

out=.gpu-debs
data=../shared/data/tinystories/tinystories-sample.txt
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --data) data="${2:?--data needs a file}"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_debs: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# The packages gpu_check.sh's header names (keep the two lists the same).
packages=(nlohmann-json3-dev libcli11-dev libsentencepiece-dev libsentencepiece0 pkgconf pkgconf-bin libpkgconf3
          libgtest-dev libgmock-dev)

marker=.hsm_gpu_debs  # in a folder this script made: any other non-empty folder is refused
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ] && [ ! -e "$out/$marker" ]; then
  echo "gpu_debs: '$out' exists and is not a folder this script made; choose another --out" >&2
  exit 1
fi
[ -f "$data" ] || { echo "gpu_debs: no corpus at '$data' (--data FILE)" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "gpu_debs: needs apt-get (a Debian machine)" >&2; exit 1; }

mkdir -p "$out/data"
touch "$out/$marker"
# apt-get download writes into the current folder; as root it drops to the _apt user, who must be
# able to write there, so it downloads into a private temporary folder first.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
(cd "$tmp" && chown _apt "$tmp" 2>/dev/null; apt-get download -q "${packages[@]}")
rm -f "$out"/*.deb
mv "$tmp"/*.deb "$out"/
cp "$data" "$out/data/tinystories-sample.txt"
echo "gpu_debs: $(ls "$out"/*.deb | wc -l) .debs and data/tinystories-sample.txt in $out ($(du -sh "$out" | cut -f1))"
