#include "perfmodel/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/xml_escape.h"
#include "perfmodel/report.h"

namespace dtrain::perf {
namespace {

constexpr double kPanelW = 420, kPanelH = 300, kLeft = 70, kTop = 50, kGap = 90, kBottom = 50;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"};

struct Axis {
  double lo, hi;
  bool log;
  double map(double v, double length) const {
    if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * length;
    return (v - lo) / (hi - lo) * length;
  }
};

// Powers of ten (log axes, with 2x and 5x when the range is narrow) or tenths (efficiency).
std::vector<double> ticks(const Axis& a) {
  std::vector<double> t;
  if (!a.log) {
    for (int i = 0; i <= 10; i += 2) t.push_back(i / 10.0);
    return t;
  }
  const bool narrow = std::log10(a.hi / a.lo) < 2.5;
  for (double d = std::pow(10, std::floor(std::log10(a.lo))); d <= a.hi * 1.0001; d *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if ((m == 1.0 || narrow) && d * m >= a.lo * 0.9999 && d * m <= a.hi * 1.0001) t.push_back(d * m);
    }
  }
  return t;
}

std::string panel(double x0, const Axis& x, const Axis& y, const std::string& ylabel, bool seconds,
                  const std::map<std::string, std::vector<std::pair<double, double>>>& lines) {
  std::string s;
  const double y0 = kTop;
  s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>)", x0, y0, kPanelW,
                   kPanelH);
  s += "\n";
  for (double t : ticks(x)) {
    const double px = x0 + x.map(t, kPanelW);
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#ddd"/>)", px, y0, y0 + kPanelH);
    s += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{:g}</text>)", px,
                     y0 + kPanelH + 15, t);
    s += "\n";
  }
  for (double t : ticks(y)) {
    const double py = y0 + kPanelH - y.map(t, kPanelH);
    const std::string label = seconds ? format_seconds(t) : fmt::format("{:.0f}%", 100 * t);
    s += fmt::format(R"(<line x1="{0}" y1="{1:.1f}" x2="{2}" y2="{1:.1f}" stroke="#ddd"/>)", x0, py, x0 + kPanelW);
    s += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)", x0 - 5, py + 4, label);
    s += "\n";
  }
  s += fmt::format(R"(<text x="{}" y="{}" font-size="12" text-anchor="middle">workers</text>)", x0 + kPanelW / 2,
                   y0 + kPanelH + 35);
  s += fmt::format(R"(<text x="{}" y="{}" font-size="13" text-anchor="middle">{}</text>)", x0 + kPanelW / 2, y0 - 8,
                   xml_escape(ylabel));
  s += "\n";
  std::size_t color = 0;
  for (const auto& [name, points] : lines) {
    std::string path;
    for (const auto& [px, py] : points) {
      path += fmt::format("{:.1f},{:.1f} ", x0 + x.map(px, kPanelW), y0 + kPanelH - y.map(py, kPanelH));
    }
    const char* c = kColors[color++ % std::size(kColors)];
    s += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>)", path, c);
    s += "\n";
    for (const auto& [px, py] : points) {
      s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", x0 + x.map(px, kPanelW),
                       y0 + kPanelH - y.map(py, kPanelH), c);
    }
    s += "\n";
  }
  return s;
}

}  // namespace

std::string scaling_svg(const std::vector<RunPrediction>& runs, const std::string& title) {
  std::map<std::string, std::vector<std::pair<double, double>>> epoch, efficiency;
  const RunPrediction* single = nullptr;
  for (const RunPrediction& r : runs) {
    if (r.config.workers == 1) {
      single = &r;
      continue;
    }
    const std::string name = exchange_label(r.config);
    epoch[name].emplace_back(r.config.workers, r.epoch_seconds);
    efficiency[name].emplace_back(r.config.workers, r.efficiency);
  }
  if (epoch.empty() && single != nullptr) {
    epoch["1 worker"].emplace_back(1, single->epoch_seconds);
    efficiency["1 worker"].emplace_back(1, single->efficiency);
  }
  if (single != nullptr) {
    for (auto& [name, points] : epoch) {
      if (name != "1 worker") points.emplace_back(1.0, single->epoch_seconds);
      std::sort(points.begin(), points.end());
    }
    for (auto& [name, points] : efficiency) {
      if (name != "1 worker") points.emplace_back(1.0, 1.0);
      std::sort(points.begin(), points.end());
    }
  }
  double wmin = 1e300, wmax = 0, tmin = 1e300, tmax = 0;
  for (const auto& [name, points] : epoch) {
    for (const auto& [w, t] : points) {
      wmin = std::min(wmin, w);
      wmax = std::max(wmax, w);
      tmin = std::min(tmin, t);
      tmax = std::max(tmax, t);
    }
  }
  if (epoch.empty()) wmin = wmax = tmin = tmax = 1;
  const Axis x{wmin / 1.3, wmax * 1.3, true};
  const Axis ty{tmin / 1.5, tmax * 1.5, true};
  const Axis ey{0, 1.05, false};
  const double width = kLeft + 2 * kPanelW + kGap + 160, height = kTop + kPanelH + kBottom + 10;
  std::string s =
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif">)"
                  "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                  R"(<text x="{}" y="20" font-size="14" font-weight="bold">{}</text>)"
                  "\n",
                  width, height, kLeft, xml_escape(title));
  s += panel(kLeft, x, ty, "time per epoch", true, epoch);
  s += panel(kLeft + kPanelW + kGap, x, ey, "scaling efficiency", false, efficiency);
  double ly = kTop + 10;
  std::size_t color = 0;
  for (const auto& [name, points] : epoch) {
    const double lx = kLeft + 2 * kPanelW + kGap + 15;
    s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/>)", lx, ly, lx + 20, ly,
                     kColors[color++ % std::size(kColors)]);
    s += fmt::format(R"(<text x="{}" y="{}" font-size="12">{}</text>)", lx + 26, ly + 4, xml_escape(name));
    s += "\n";
    ly += 18;
  }
  return s + "</svg>\n";
}

}  // namespace dtrain::perf
