#!/bin/bash
# Screenshots of every view as people see them (issue 69): the studio with a fresh home folder
# under Xvfb and openbox, its window maximised, the three bundled models open (as on a first
# start), at 1024x600 and 1920x1080, into docs/screenshots/studio-WxH-VIEW.png (PNG8).
# Needs Xvfb, openbox, xdotool and ImageMagick (import, convert): the screenshots', not the
# product's, dependencies.  Usage: packaging/screenshots.sh [BUILD_DIR] [SIZE...]
set -euo pipefail
build=${1:-build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1024x600 1920x1080)
out=${SCREENSHOTS_OUT:-docs/screenshots}
studio=$build/app/hsm-studio
[ -x "$studio" ] || { echo "no $studio: build the hsm-studio target first" >&2; exit 2; }
display=:57
# The view shortcuts (View menu): Ctrl+1..9 and Ctrl+Shift+T. The Experiments view's buttons are
# left-aligned: the same pixels at every size.
views=(architecture training weights diagnostics playground probe losses lab experiments)

for size in "${sizes[@]}"; do
  home=$(mktemp -d)
  # openbox maximises the main window (a user's first act on a small screen), not its dialogs
  # (the tour, the help) nor the presentation, which goes full screen itself.
  mkdir -p "$home/.config/openbox"
  cat >"$home/.config/openbox/rc.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <applications><application title="HSM Studio" type="normal"><maximized>yes</maximized></application></applications>
</openbox_config>
EOF
  Xvfb $display -screen 0 "${size}x24" -nolisten tcp >/dev/null 2>&1 &
  xvfb=$!
  sleep 2
  export DISPLAY=$display HOME=$home XDG_CONFIG_HOME=$home/.config
  openbox --config-file "$home/.config/openbox/rc.xml" >/dev/null 2>&1 &
  wm=$!
  sleep 1
  "$studio" >"$home/studio.log" 2>&1 &
  app=$!
  # The studio's window, or the studio's log if it ended first (no resources folder, no display).
  window=
  for _ in $(seq 60); do
    window=$(xdotool search --name "^HSM Studio$" | head -1) || true
    [ -n "$window" ] && break
    kill -0 "$app" 2>/dev/null || { cat "$home/studio.log" >&2; exit 1; }
    sleep 1
  done
  [ -n "$window" ] || { echo "no studio window after 60 s" >&2; exit 1; }
  sleep 8
  shot() {
    import -window root "$home/shot.png"
    convert "$home/shot.png" +dither -colors 256 "PNG8:$out/studio-$size-$1.png"
  }
  # The first-run tour, a dialog of its own: Esc closes it.
  tour=$(xdotool search --name "tour of HSM Studio" | head -1) || true
  [ -z "$tour" ] || xdotool windowactivate --sync "$tour" key Escape
  sleep 2
  shot start
  for i in "${!views[@]}"; do
    xdotool windowactivate --sync "$window" key "ctrl+$((i + 1))"
    sleep 6  # the view's first answers (weights, a diagnosis, scores) come off the GUI thread
    # Experiments: "Use the open runs", the bundled models' settings that differ.
    [ "${views[$i]}" = experiments ] && { xdotool mousemove 217 122 click 1; sleep 6; }
    shot "${views[$i]}"
  done
  xdotool windowactivate --sync "$window" key ctrl+shift+t  # Trace, the tenth tab
  sleep 6
  shot trace
  # The Lab's help (F1, F1 again closes it) and a story presented full screen (F11, Space).
  xdotool windowactivate --sync "$window" key ctrl+8
  sleep 2
  xdotool key F1
  sleep 3
  shot lab-help
  xdotool key F1
  sleep 2
  xdotool windowactivate --sync "$window" key ctrl+5
  sleep 2
  xdotool key F11
  sleep 3
  xdotool key space
  sleep 20
  shot presentation
  xdotool key Escape
  sleep 1
  kill "$app" 2>/dev/null || true
  wait "$app" 2>/dev/null || true
  kill "$wm" "$xvfb" 2>/dev/null || true
  wait "$wm" "$xvfb" 2>/dev/null || true
  rm -rf "$home"
done
