// A line chart as SVG text: one line per series over a shared x axis
// (logarithmic base 2, e.g. message sizes, or linear), y linear from 0,
// axis ticks, a legend, and optional vertical markers (e.g. a threshold).
// Deterministic: the same data gives the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tpuemu::api {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), in the order drawn
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log2_x = false;  // x > 0 required
  std::vector<PlotSeries> series;
  std::vector<std::pair<double, std::string>> markers;  // vertical lines at x, labelled
  // Tick labels of x: a size ("64K", "1M") when true, else a number.
  bool x_is_bytes = false;
};

std::string line_plot_svg(const LinePlot& plot);
// Several charts stacked top to bottom in one SVG (each as line_plot_svg draws it).
std::string line_plots_svg(const std::vector<LinePlot>& plots);

}  // namespace tpuemu::api
