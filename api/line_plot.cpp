#include "api/line_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpuemu::api {

namespace {

constexpr double kWidth = 720;
constexpr double kHeight = 420;
constexpr double kLeft = 70;
constexpr double kRight = 170;  // legend
constexpr double kTop = 40;
constexpr double kBottom = 50;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string bytes_label(double v) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:g}{}", v, kUnits[unit]);
}

}  // namespace

std::string line_plot_svg(const LinePlot& plot) {
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -x_min;
  double y_max = 0;
  for (const auto& s : plot.series) {
    for (const auto& [x, y] : s.points) {
      const double xv = plot.log2_x ? std::log2(x) : x;
      x_min = std::min(x_min, xv);
      x_max = std::max(x_max, xv);
      y_max = std::max(y_max, y);
    }
  }
  // Markers widen the x range, so that each one's line shows (a threshold
  // outside the swept values fell off the canvas).
  for (const auto& [x, label] : plot.markers) {
    if (plot.log2_x && !(x > 0)) continue;
    const double xv = plot.log2_x ? std::log2(x) : x;
    x_min = std::min(x_min, xv);
    x_max = std::max(x_max, xv);
  }
  if (!(x_min <= x_max)) x_min = x_max = 0;
  if (x_max == x_min) {
    x_min -= 1;
    x_max += 1;
  }
  if (!(y_max > 0)) y_max = 1;
  // A round y range: 1, 2 or 5 times a power of ten per tick, 5 ticks or so.
  const double raw = y_max / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / magnitude <= 1   ? magnitude
                      : raw / magnitude <= 2 ? 2 * magnitude
                      : raw / magnitude <= 5 ? 5 * magnitude
                                             : 10 * magnitude;
  const double y_top = std::ceil(y_max / step) * step;
  const double pw = kWidth - kLeft - kRight;
  const double ph = kHeight - kTop - kBottom;
  const auto px = [&](double x) {
    const double xv = plot.log2_x ? std::log2(x) : x;
    return kLeft + (xv - x_min) / (x_max - x_min) * pw;
  };
  const auto py = [&](double y) { return kTop + ph - y / y_top * ph; };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
      kWidth, kHeight);
  out += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2,
                     escape(plot.title));
  // Axes and y ticks.
  out += fmt::format("<path d=\"M{0} {1} V{2} H{3}\" stroke=\"black\" fill=\"none\"/>\n", kLeft, kTop, kTop + ph,
                     kLeft + pw);
  for (double y = 0; y <= y_top + step / 2; y += step) {
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/><text x=\"{3}\" y=\"{4:.1f}\" "
        "text-anchor=\"end\">{5:g}</text>\n",
        kLeft, py(y), kLeft + pw, kLeft - 6, py(y) + 4, y);
  }
  // x ticks: every point's x of the first series (sizes), at most 12 labels.
  std::vector<double> xs;
  for (const auto& s : plot.series) {
    for (const auto& p : s.points) xs.push_back(p.first);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const std::size_t every = std::max<std::size_t>(1, (xs.size() + 11) / 12);
  for (std::size_t i = 0; i < xs.size(); i += every) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(xs[i]), kTop + ph + 18,
                       plot.x_is_bytes ? bytes_label(xs[i]) : fmt::format("{:g}", xs[i]));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2, kHeight - 10,
                     escape(plot.x_label));
  out += fmt::format("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {0})\">{1}</text>\n",
                     kTop + ph / 2, escape(plot.y_label));
  // Each marker's label on its own line (two series' thresholds may coincide).
  for (std::size_t m = 0; m < plot.markers.size(); ++m) {
    const auto& [x, label] = plot.markers[m];
    if (plot.log2_x && !(x > 0)) continue;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>"
        "<text x=\"{3:.1f}\" y=\"{4}\" fill=\"#555\">{5}</text>\n",
        px(x), kTop, kTop + ph, px(x) + 3, kTop + 12 + 14 * static_cast<double>(m), escape(label));
  }
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const PlotSeries& s = plot.series[i];
    const char* colour = kColours[i % std::size(kColours)];
    std::string d;
    for (const auto& [x, y] : s.points) d += fmt::format("{}{:.1f} {:.1f}", d.empty() ? "M" : " L", px(x), py(y));
    if (!d.empty()) out += fmt::format("<path d=\"{}\" stroke=\"{}\" stroke-width=\"2\" fill=\"none\"/>\n", d, colour);
    for (const auto& [x, y] : s.points) {
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x), py(y), colour);
    }
    const double ly = kTop + 10 + 18 * static_cast<double>(i);
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"/><text x=\"{4}\" "
        "y=\"{5}\">{6}</text>\n",
        kLeft + pw + 14, ly, kLeft + pw + 34, colour, kLeft + pw + 40, ly + 4, escape(s.name));
  }
  out += "</svg>\n";
  return out;
}

std::string line_plots_svg(const std::vector<LinePlot>& plots) {
  std::string out =
      fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\">\n",
                  kWidth, kHeight * static_cast<double>(plots.size()));
  for (std::size_t i = 0; i < plots.size(); ++i) {
    std::string chart = line_plot_svg(plots[i]);
    chart.replace(0, 4, fmt::format("<svg x=\"0\" y=\"{}\"", kHeight * static_cast<double>(i)));
    out += chart;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace tpuemu::api
