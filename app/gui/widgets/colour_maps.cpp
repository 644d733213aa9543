#include "gui/widgets/colour_maps.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace studio::colours {
namespace {

QColor cycle(const QColor* colours, int count, int i) {
  return colours[((i % count) + count) % count];
}

// Channel by channel from a to b, f in [0, 1], rounded to whole channels.
QColor mixRounded(const QColor& a, const QColor& b, double f) {
  const auto mix = [f](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * f)); };
  return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
}

}  // namespace

QColor withAlpha(QColor colour, int alpha) {
  colour.setAlpha(alpha);
  return colour;
}

QColor tableau10(int i) {
  static const QColor kColours[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0xe1, 0x57, 0x59),
                                    QColor(0x76, 0xb7, 0xb2), QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48),
                                    QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7), QColor(0x9c, 0x75, 0x5f),
                                    QColor(0xba, 0xb0, 0xac)};
  return cycle(kColours, static_cast<int>(std::size(kColours)), i);
}

QColor category10(int i, int count) {
  static const QColor kColours[] = {QColor(31, 119, 180),  QColor(255, 127, 14), QColor(44, 160, 44),
                                    QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                                    QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34),
                                    QColor(23, 190, 207)};
  return cycle(kColours, std::clamp(count, 1, static_cast<int>(std::size(kColours))), i);
}

QColor okabeIto(int i) {
  static const QColor kColours[] = {QColor(0x00, 0x72, 0xb2), QColor(0xe6, 0x9f, 0x00), QColor(0x00, 0x9e, 0x73),
                                    QColor(0xd5, 0x5e, 0x00), QColor(0xcc, 0x79, 0xa7), QColor(0x56, 0xb4, 0xe9),
                                    QColor(0xf0, 0xe4, 0x42), QColor(0x00, 0x00, 0x00)};
  return cycle(kColours, static_cast<int>(std::size(kColours)), i);
}

QColor rdbuRed() { return QColor(0xb2, 0x18, 0x2b); }
QColor rdbuWhite() { return QColor(0xf7, 0xf7, 0xf7); }
QColor rdbuBlue() { return QColor(0x21, 0x66, 0xac); }

const std::vector<ColourStop>& rdbuStops() {
  static const std::vector<ColourStop> kStops = {
      {0.0, rdbuRed()}, {0.25, QColor(0xef, 0x8a, 0x62)}, {0.5, rdbuWhite()}, {0.75, QColor(0x67, 0xa9, 0xcf)},
      {1.0, rdbuBlue()}};
  return kStops;
}

QColor rdbuFromWhite(double f) {
  return mixRounded(rdbuWhite(), f < 0 ? rdbuBlue() : rdbuRed(), std::clamp(std::abs(f), 0.0, 1.0));
}

const std::vector<ColourStop>& bluesStops() {
  static const std::vector<ColourStop> kStops = {{0.0, QColor(255, 255, 255)},
                                                 {0.25, QColor(198, 219, 239)},
                                                 {0.55, QColor(107, 174, 214)},
                                                 {0.8, QColor(33, 113, 181)},
                                                 {1.0, QColor(8, 48, 107)}};
  return kStops;
}

QColor oranges(double t) {
  return mixRounded(QColor(0xff, 0xf5, 0xeb), QColor(0xd9, 0x48, 0x01), std::clamp(t, 0.0, 1.0));
}

QColor viridis(double t) {
  static const QColor kStops[] = {QColor(0x44, 0x01, 0x54), QColor(0x47, 0x2c, 0x7a), QColor(0x3b, 0x51, 0x8b),
                                  QColor(0x2c, 0x71, 0x8e), QColor(0x21, 0x90, 0x8d), QColor(0x27, 0xad, 0x81),
                                  QColor(0x5c, 0xc8, 0x63), QColor(0xaa, 0xdc, 0x32), QColor(0xfd, 0xe7, 0x25)};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 8;
  const int i = std::min(static_cast<int>(t), 7);
  const double f = t - i;
  const QColor& a = kStops[i];
  const QColor& b = kStops[i + 1];
  return QColor::fromRgbF(a.redF() + f * (b.redF() - a.redF()), a.greenF() + f * (b.greenF() - a.greenF()),
                          a.blueF() + f * (b.blueF() - a.blueF()));
}

QColor redToGreen(double t, double saturation, double value) {
  return QColor::fromHsvF(static_cast<float>(std::clamp(t, 0.0, 1.0) / 3.0), static_cast<float>(saturation),
                          static_cast<float>(value));
}

QColor whiteToBlue(double t, double redDepth, double greenDepth) {
  return QColor::fromRgbF(static_cast<float>(1.0 - redDepth * t), static_cast<float>(1.0 - greenDepth * t), 1.0f);
}

QColor layerShade(int i, int n) {
  const double t = n <= 1 ? 0.5 : static_cast<double>(i) / (n - 1);
  return QColor::fromHsvF(0.62 - 0.55 * t, 0.75, 0.85 - 0.25 * t);
}

QString swatch(const QColor& colour, const QString& text) {
  return QStringLiteral("<span style='background:%1; color:black'>&nbsp;%2&nbsp;</span>").arg(colour.name(), text.toHtmlEscaped());
}

}  // namespace studio::colours
