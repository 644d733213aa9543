// The SVG plot writer of reports (hsm/svg_plot.h).
#include "hsm/svg_plot.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace hsm {

namespace {

const char* const kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#f0e442", "#000000"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick's text: 0.001, 1e-04, 256.
std::string tick_text(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) < 0.001 || std::fabs(v) >= 100000))
    std::snprintf(buf, sizeof buf, "%.0e", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

struct Box {
  double x0, y0, w, h;  // the plotting area inside a panel
};

void draw_axes(std::ostringstream& s, const SvgPanel& p, const Box& b, double px, double py, int pw) {
  s << "<text x=\"" << num(px + pw / 2.0) << "\" y=\"" << num(py + 14) << "\" text-anchor=\"middle\" font-size=\"12\" "
    << "font-weight=\"bold\">" << xml_escape(p.title) << "</text>\n";
  s << "<rect x=\"" << num(b.x0) << "\" y=\"" << num(b.y0) << "\" width=\"" << num(b.w) << "\" height=\"" << num(b.h)
    << "\" fill=\"none\" stroke=\"#888\"/>\n";
  // y ticks: five, from y_min to y_max.
  for (int i = 0; i <= 4; ++i) {
    const double v = p.y_min + (p.y_max - p.y_min) * i / 4.0;
    const double y = b.y0 + b.h - b.h * i / 4.0;
    s << "<line x1=\"" << num(b.x0 - 3) << "\" y1=\"" << num(y) << "\" x2=\"" << num(b.x0 + b.w) << "\" y2=\"" << num(y)
      << "\" stroke=\"#ddd\"/>\n";
    s << "<text x=\"" << num(b.x0 - 5) << "\" y=\"" << num(y + 3) << "\" text-anchor=\"end\" font-size=\"9\">"
      << tick_text(v) << "</text>\n";
  }
  s << "<text x=\"" << num(b.x0 + b.w / 2) << "\" y=\"" << num(b.y0 + b.h + 30) << "\" text-anchor=\"middle\" "
    << "font-size=\"10\">" << xml_escape(p.x_label) << "</text>\n";
  s << "<text transform=\"translate(" << num(b.x0 - 32) << "," << num(b.y0 + b.h / 2) << ") rotate(-90)\" "
    << "text-anchor=\"middle\" font-size=\"10\">" << xml_escape(p.y_label) << "</text>\n";
}

double y_pos(const SvgPanel& p, const Box& b, double v) {
  const double f = (std::clamp(v, p.y_min, p.y_max) - p.y_min) / (p.y_max - p.y_min);
  return b.y0 + b.h - f * b.h;
}

void draw_ref_lines(std::ostringstream& s, const SvgPanel& p, const Box& b) {
  for (const SvgRefLine& l : p.lines) {
    if (!std::isfinite(l.y)) continue;
    const double y = y_pos(p, b, l.y);
    s << "<line class=\"ref\" x1=\"" << num(b.x0) << "\" y1=\"" << num(y) << "\" x2=\"" << num(b.x0 + b.w) << "\" y2=\""
      << num(y) << "\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n";
    s << "<text x=\"" << num(b.x0 + b.w - 2) << "\" y=\"" << num(y - 3) << "\" text-anchor=\"end\" font-size=\"9\" "
      << "fill=\"#555\">" << xml_escape(l.label) << "</text>\n";
  }
}

void draw_error_bar(std::ostringstream& s, const SvgPanel& p, const Box& b, double x, double y, double e,
                    const std::string& colour) {
  if (!std::isfinite(e) || e <= 0) return;
  const double lo = y_pos(p, b, y - e), hi = y_pos(p, b, y + e);
  s << "<path d=\"M" << num(x) << " " << num(lo) << "V" << num(hi) << "M" << num(x - 3) << " " << num(lo) << "h6M"
    << num(x - 3) << " " << num(hi) << "h6\" stroke=\"" << colour << "\" fill=\"none\"/>\n";
}

void draw_bars(std::ostringstream& s, const SvgPanel& p, const Box& b) {
  const size_t cats = p.categories.size(), n = std::max<size_t>(1, p.series.size());
  const double slot = b.w / static_cast<double>(cats), bar = slot * 0.8 / static_cast<double>(n);
  for (size_t c = 0; c < cats; ++c) {
    const double cx = b.x0 + slot * (static_cast<double>(c) + 0.5);
    s << "<text transform=\"translate(" << num(cx - slot * 0.35) << "," << num(b.y0 + b.h + 12) << ") rotate(20)\" font-size=\"9\">"
      << xml_escape(p.categories[c]) << "</text>\n";
    for (size_t k = 0; k < p.series.size(); ++k) {
      const SvgSeries& ser = p.series[k];
      if (c >= ser.y.size() || !std::isfinite(ser.y[c])) continue;
      // One series: a colour per category (the mixers); several: a colour per series.
      const int ci = ser.colour >= 0 ? ser.colour : static_cast<int>(p.series.size() == 1 ? c : k);
      const double x = cx - slot * 0.4 + bar * static_cast<double>(k), top = y_pos(p, b, ser.y[c]);
      s << "<rect x=\"" << num(x) << "\" y=\"" << num(top) << "\" width=\"" << num(bar * 0.9) << "\" height=\""
        << num(b.y0 + b.h - top) << "\" fill=\"" << svg_colour(ci) << "\"><title>" << xml_escape(p.categories[c]) << ": "
        << tick_text(ser.y[c]) << "</title></rect>\n";
      if (c < ser.err.size()) draw_error_bar(s, p, b, x + bar * 0.45, ser.y[c], ser.err[c], "#000");
    }
  }
}

void draw_lines(std::ostringstream& s, const SvgPanel& p, const Box& b) {
  double lo = INFINITY, hi = -INFINITY;
  auto extend = [&](double x) {
    if (std::isfinite(x) && (!p.log_x || x > 0)) {
      const double v = p.log_x ? std::log10(x) : x;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  };
  for (const SvgSeries& ser : p.series)
    for (double x : ser.x) extend(x);
  for (const SvgVLine& v : p.vlines) extend(v.x);
  if (!std::isfinite(lo)) return;
  if (hi == lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double pad = (hi - lo) * 0.08;
  lo -= pad;
  hi += pad;
  auto x_pos = [&](double x) { return b.x0 + ((p.log_x ? std::log10(x) : x) - lo) / (hi - lo) * b.w; };
  // x ticks at the series' own x values (the grid's learning rates or widths).
  std::vector<double> xs;
  for (const SvgSeries& ser : p.series) xs.insert(xs.end(), ser.x.begin(), ser.x.end());
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  // Many x values (distances 2..63): every k-th labelled, so that the labels do not overlap.
  const size_t every = xs.size() > 12 ? (xs.size() + 9) / 10 : 1;
  for (size_t i = 0; i < xs.size(); i += every) {
    const double x = xs[i];
    if (!std::isfinite(x) || (p.log_x && x <= 0)) continue;
    s << "<text x=\"" << num(x_pos(x)) << "\" y=\"" << num(b.y0 + b.h + 12) << "\" text-anchor=\"middle\" "
      << "font-size=\"9\">" << tick_text(x) << "</text>\n";
  }
  for (const SvgVLine& v : p.vlines) {
    if (!std::isfinite(v.x) || (p.log_x && v.x <= 0)) continue;
    const std::string colour = v.colour >= 0 ? svg_colour(v.colour) : "#555";
    const double x = x_pos(v.x);
    s << "<line class=\"vref\" data-x=\"" << tick_text(v.x) << "\" x1=\"" << num(x) << "\" y1=\"" << num(b.y0)
      << "\" x2=\"" << num(x) << "\" y2=\"" << num(b.y0 + b.h) << "\" stroke=\"" << colour
      << "\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n";
    s << "<text x=\"" << num(x + 3) << "\" y=\"" << num(b.y0 + 10) << "\" font-size=\"9\" fill=\"" << colour << "\">"
      << xml_escape(v.label) << "</text>\n";
  }
  for (size_t k = 0; k < p.series.size(); ++k) {
    const SvgSeries& ser = p.series[k];
    const std::string colour = svg_colour(ser.colour >= 0 ? ser.colour : static_cast<int>(k));
    std::string path;
    for (size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i) {
      if (!std::isfinite(ser.y[i]) || !std::isfinite(ser.x[i]) || (p.log_x && ser.x[i] <= 0)) continue;
      const double x = x_pos(ser.x[i]), y = y_pos(p, b, ser.y[i]);
      path += (path.empty() ? "M" : "L") + num(x) + " " + num(y);
      s << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"3\" fill=\"" << colour << "\"><title>"
        << xml_escape(ser.label) << ": " << tick_text(ser.x[i]) << ", " << tick_text(ser.y[i]) << "</title></circle>\n";
      if (i < ser.err.size()) draw_error_bar(s, p, b, x, ser.y[i], ser.err[i], colour);
    }
    if (!path.empty())
      s << "<path d=\"" << path << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\"/>\n";
  }
}

}  // namespace

std::string svg_colour(int index) {
  const int n = static_cast<int>(sizeof kPalette / sizeof kPalette[0]);
  return kPalette[((index % n) + n) % n];
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string svg_figure(const std::string& title, const std::vector<SvgPanel>& panels, int columns, int panel_width,
                       int panel_height) {
  columns = std::max(1, std::min<int>(columns, std::max<int>(1, static_cast<int>(panels.size()))));
  const int rows = (static_cast<int>(panels.size()) + columns - 1) / columns;
  // The legend: each label once, with the colour it was drawn in.
  std::vector<std::pair<std::string, int>> legend;
  for (const SvgPanel& p : panels) {
    if (!p.categories.empty() && p.series.size() == 1) {
      for (size_t c = 0; c < p.categories.size(); ++c)
        if (std::none_of(legend.begin(), legend.end(), [&](const auto& l) { return l.first == p.categories[c]; }))
          legend.emplace_back(p.categories[c], static_cast<int>(c));
      continue;
    }
    for (size_t k = 0; k < p.series.size(); ++k)
      if (std::none_of(legend.begin(), legend.end(), [&](const auto& l) { return l.first == p.series[k].label; }))
        legend.emplace_back(p.series[k].label, p.series[k].colour >= 0 ? p.series[k].colour : static_cast<int>(k));
  }
  const int legend_rows = (static_cast<int>(legend.size()) + 3) / 4;
  const int width = columns * panel_width, height = 30 + rows * panel_height + 10 + legend_rows * 16;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
    << width << " " << height << "\" font-family=\"sans-serif\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  s << "<text x=\"" << width / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">" << xml_escape(title)
    << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i) {
    const SvgPanel& p = panels[i];
    const double px = static_cast<double>(static_cast<int>(i) % columns * panel_width);
    const double py = 30.0 + static_cast<double>(static_cast<int>(i) / columns * panel_height);
    const Box b{px + 48, py + 22, panel_width - 60.0, panel_height - 70.0};
    draw_axes(s, p, b, px, py, panel_width);
    draw_ref_lines(s, p, b);
    if (!p.categories.empty())
      draw_bars(s, p, b);
    else
      draw_lines(s, p, b);
  }
  for (size_t i = 0; i < legend.size(); ++i) {
    const double x = 10.0 + static_cast<double>(i % 4) * (width - 20) / 4.0;
    const double y = 30.0 + rows * panel_height + 10 + static_cast<double>(i / 4) * 16;
    s << "<rect x=\"" << num(x) << "\" y=\"" << num(y - 9) << "\" width=\"10\" height=\"10\" fill=\""
      << svg_colour(legend[i].second) << "\"/>\n";
    s << "<text x=\"" << num(x + 14) << "\" y=\"" << num(y) << "\" font-size=\"10\">" << xml_escape(legend[i].first)
      << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace hsm
