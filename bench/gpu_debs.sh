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
me=gpu_debs
# shellcheck source=bench/script_args.sh
. "$(dirname "$0")/script_args.sh"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$(value "$@") || exit 2; shift 2 ;;
    --data) data=$(value "$@") || exit 2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# The packages gpu_check.sh's header names (keep the two lists the same).
packages=(nlohmann-json3-dev libcli11-dev libsentencepiece-dev libsentencepiece0 pkgconf pkgconf-bin libpkgconf3
          libgtest-dev libgmock-dev)

[ -f "$data" ] || { echo "gpu_debs: no corpus at '$data' (--data FILE)" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "gpu_debs: needs apt-get (a Debian machine)" >&2; exit 1; }
own_folder --out "$out" .hsm_gpu_debs  # new, empty or this script's (its marker): any other is refused
# data/ and the .debs are the script's own in its folder: made anew, never written through a link.
rm -rf -- "$out/data"
mkdir "$out/data"
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
