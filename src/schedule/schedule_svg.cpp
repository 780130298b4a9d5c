#include "schedule/schedule_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/xml_escape.h"
#include "perfmodel/report.h"
#include "schedule/schedule_report.h"

namespace dtrain::schedule {
namespace {

constexpr double kGanttLeft = 120, kGanttTop = 50, kGanttWidth = 900, kRowHeight = 14, kBarHeight = 10;
// Colors by rank count (1, 2, 3-4, 5-8, 9-16, more): light to dark.
constexpr const char* kRankColors[] = {"#c6dbef", "#9ecae1", "#6baed6", "#3182bd", "#08519c", "#08306b"};
constexpr const char* kRankBands[] = {"1", "2", "3-4", "5-8", "9-16", "17+"};

std::size_t rank_band(int ranks) {
  if (ranks <= 2) return static_cast<std::size_t>(std::max(ranks, 1) - 1);
  if (ranks <= 4) return 2;
  if (ranks <= 8) return 3;
  if (ranks <= 16) return 4;
  return 5;
}

// A round tick step giving about 8 ticks over `span` seconds.
double tick_step(double span) {
  const double raw = span / 8;
  for (double step : {1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0,
                      21600.0, 43200.0, 86400.0}) {
    if (step >= raw) return step;
  }
  return 86400.0 * std::ceil(raw / 86400.0);
}

}  // namespace

std::string schedule_svg(const ScheduleResult& r, const std::vector<Job>& jobs, const std::string& title) {
  double t0 = 0, t1 = 1;
  for (const JobOutcome& o : r.jobs) {
    t0 = std::min(t0, o.submit);
    t1 = std::max(t1, o.end);
  }
  const double span = t1 - t0;
  const auto x = [&](double t) { return kGanttLeft + (t - t0) / span * kGanttWidth; };
  const double rows_bottom = kGanttTop + kRowHeight * static_cast<double>(r.jobs.size());
  const double width = kGanttLeft + kGanttWidth + 140, height = rows_bottom + 50;
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      R"(<text x="{}" y="20" font-size="14" font-weight="bold">{}</text>)"
      "\n"
      R"(<text x="{}" y="38" font-size="11">mean JCT {}, makespan {}, utilisation {:.0f}%, {} preemptions</text>)"
      "\n",
      width, height, kGanttLeft, xml_escape(title), kGanttLeft, perf::format_seconds(r.mean_jct),
      perf::format_seconds(r.makespan), 100 * r.utilisation, r.preemptions);
  const double step = tick_step(span);
  for (double t = 0; t <= span * 1.0001; t += step) {
    const double px = x(t0 + t);
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#e5e5e5"/>)", px, kGanttTop,
                     rows_bottom);
    s += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">{}</text>)", px, rows_bottom + 14,
                     format_clock(t));
    s += "\n";
  }
  s += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="middle">time since the first submission</text>)",
                   kGanttLeft + kGanttWidth / 2, rows_bottom + 32);
  s += "\n";
  for (std::size_t i = 0; i < r.jobs.size(); ++i) {
    const JobOutcome& o = r.jobs[i];
    const double y = kGanttTop + kRowHeight * static_cast<double>(i);
    const double bar = y + (kRowHeight - kBarHeight) / 2;
    s += fmt::format(R"(<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>)", kGanttLeft - 6,
                     y + kRowHeight - 3, xml_escape(jobs[i].name));
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" stroke="#d62728"/>)", x(o.submit),
                     y + 1, y + kRowHeight - 1);
    for (const Segment& g : o.segments) {
      const double px = x(g.start), w = std::max(0.5, x(g.end) - px);
      s += fmt::format(R"(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{}" fill="{}"{}>)"
                       R"(<title>{}: {} ranks, {} to {}{}</title></rect>)",
                       px, bar, w, kBarHeight, kRankColors[rank_band(g.ranks)],
                       g.probe ? R"( stroke="#ff7f0e" stroke-dasharray="2,1")" : "", xml_escape(jobs[i].name), g.ranks,
                       format_clock(g.start - t0), format_clock(g.end - t0), g.probe ? " (probe)" : "");
      if (g.overhead > 0) {
        s += fmt::format(R"(<rect x="{:.2f}" y="{:.1f}" width="{:.2f}" height="{}" fill="#444" opacity="0.6"/>)", px,
                         bar, std::min(w, x(g.start + g.overhead) - px), kBarHeight);
      }
      if (w > 14) {
        s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="8" text-anchor="middle" fill="{}">{}</text>)",
                         px + w / 2, bar + kBarHeight - 2, rank_band(g.ranks) >= 3 ? "white" : "black", g.ranks);
      }
    }
    s += "\n";
  }
  const double lx = kGanttLeft + kGanttWidth + 20;
  s += fmt::format(R"(<text x="{}" y="{}" font-size="11">ranks</text>)", lx, kGanttTop + 8);
  for (std::size_t b = 0; b < std::size(kRankColors); ++b) {
    const double ly = kGanttTop + 16 + 16 * static_cast<double>(b);
    s += fmt::format(R"(<rect x="{}" y="{}" width="14" height="10" fill="{}"/>)", lx, ly, kRankColors[b]);
    s += fmt::format(R"(<text x="{}" y="{}" font-size="10">{}</text>)", lx + 20, ly + 9, kRankBands[b]);
  }
  const double ly = kGanttTop + 16 + 16 * static_cast<double>(std::size(kRankColors)) + 6;
  s += fmt::format(R"(<rect x="{}" y="{}" width="14" height="10" fill="#444" opacity="0.6"/>)", lx, ly);
  s += fmt::format(R"(<text x="{}" y="{}" font-size="10">preemption paid</text>)", lx + 20, ly + 9);
  s += fmt::format(
      R"(<rect x="{}" y="{}" width="14" height="10" fill="white" stroke="#ff7f0e" stroke-dasharray="2,1"/>)", lx,
      ly + 16);
  s += fmt::format(R"(<text x="{}" y="{}" font-size="10">probe run</text>)", lx + 20, ly + 25);
  s += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#d62728"/>)", lx + 7, ly + 32, ly + 42);
  s += fmt::format(R"(<text x="{}" y="{}" font-size="10">submitted</text>)", lx + 20, ly + 41);
  return s + "\n</svg>\n";
}

}  // namespace dtrain::schedule
