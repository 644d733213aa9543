#pragma once
// The studio's colour maps, each defined once (issue 47): the qualitative palettes that tell
// runs, layers and groups apart, and the sequential and diverging maps that encode a value.
// A view or widget asks here; no other file holds a table of colours (tests/check_colour_maps.sh).
#include <QColor>
#include <QString>
#include <vector>

namespace studio::colours {

// One entry of a colour key, as rich text for a QLabel: `text` on a swatch of `colour` (issue 48:
// a key beside every tint).
QString swatch(const QColor& colour, const QString& text);

// The colour with this alpha (0-255).
QColor withAlpha(QColor colour, int alpha);

// --- Qualitative: one colour per item, cycling ------------------------------------------------

// Tableau 10 (2016): the open runs' colours in every plot (RunList).
QColor tableau10(int i);
// Matplotlib's / D3's "tab10" (category10): blue, orange, green, red, purple, brown, pink,
// grey, olive, cyan. The first `count` of them cycle (count 8: without olive and cyan).
QColor category10(int i, int count = 10);
// Okabe & Ito (2008): eight colours readers with any colour vision deficiency tell apart.
QColor okabeIto(int i);

// --- Sequential and diverging: a value in [0, 1] (or [-1, 1]) to a colour ---------------------

// A colour stop of a map: the colour at `at` in [0, 1].
struct ColourStop {
  double at;
  QColor colour;
};

// ColorBrewer RdBu, five classes: red (0) · light red · near white (0.5) · light blue · blue (1).
// Colour-blind safe; blue is "better" or "positive" wherever the studio uses it.
const std::vector<ColourStop>& rdbuStops();
QColor rdbuRed();    // #b2182b
QColor rdbuWhite();  // #f7f7f7
QColor rdbuBlue();   // #2166ac
// From near white (0) to RdBu's blue (f = -1) or red (f = +1), rounding to whole channels.
QColor rdbuFromWhite(double f);

// ColorBrewer Blues (five stops, from white): a heatmap's non-negative values.
const std::vector<ColourStop>& bluesStops();

// ColorBrewer Oranges, pale (#fff5eb) at 0 to dark (#d94801) at 1, rounding to whole channels:
// one hue, so black text on it stays readable.
QColor oranges(double t);

// Matplotlib's viridis (nine stops, interpolated): dark purple (0) to yellow (1); t that is not
// finite is 0.
QColor viridis(double t);

// Hue from red (0) through yellow to green (1), at this HSV saturation and value.
QColor redToGreen(double t, double saturation, double value);

// From white (0) to a blue (1) whose red and green are 1 - redDepth and 1 - greenDepth: a
// cell's or a token's background.
QColor whiteToBlue(double t, double redDepth, double greenDepth);

// Light (first of n) to dark (last): the layers of a model, as Deconstructing Attention's
// figures shade them.
QColor layerShade(int i, int n);

}  // namespace studio::colours
