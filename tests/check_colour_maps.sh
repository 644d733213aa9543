#!/bin/bash
# The studio's colour maps are defined once (issue 47): in app/gui/widgets/colour_maps.cpp
# (studio::colours). Fails naming each other place in app/ that holds a table of colours: one
# statement with three or more colour literals (QColor(r, g, b...), "#rrggbb", {r, g, b}), or a
# file that sets three or more gradient stops to literal colours.
#   usage: check_colour_maps.sh REPO_DIR
set -u
cd "${1:?usage: check_colour_maps.sh REPO_DIR}" || exit 2
owner=app/gui/widgets/colour_maps.cpp
found=$(find app -name '*.cpp' -o -name '*.h' | sort | grep -vx "$owner" | xargs perl -0777 -ne '
  my $text = $_;
  $text =~ s{//[^\n]*}{}g;                                   # comments say which map; they are not one
  my $literal = qr{QColor\s*\(\s*(?:0x[0-9a-fA-F]+|\d+)\s*,|"\#[0-9a-fA-F]{6}"|\{\s*\d+\s*,\s*\d+\s*,\s*\d+\s*(?:,\s*\d+\s*)?\}};
  my $offset = 0;
  for my $statement (split /;/, $text) {
    my $n = () = $statement =~ /$literal/g;
    if ($n >= 3) {
      my $line = 1 + (() = substr($text, 0, $offset + length($statement)) =~ /\n/g);
      print "$ARGV:$line: a table of $n colours\n";
    }
    $offset += length($statement) + 1;
  }
  my $stops = () = $text =~ /setColorStopAt\s*\([^;]*?QColor\s*\(\s*\d/g;
  print "$ARGV: $stops gradient stops of literal colours\n" if $stops >= 3;
')
if [[ -n $found ]]; then
  echo "$found"
  echo "a colour map defined outside $owner: add it there (studio::colours, app/gui/widgets/colour_maps.h) and use it"
  exit 1
fi
echo "colour maps: defined in $owner only"
