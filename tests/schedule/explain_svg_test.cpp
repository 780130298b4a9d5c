// A decision explained with the model's terms, and the Gantt chart as well-formed SVG.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedule/explain_decision.h"
#include "schedule/policy.h"
#include "schedule/schedule_report.h"
#include "schedule/schedule_svg.h"
#include "schedule_test_util.h"
#include "support/text.h"

namespace {

using dtrain::schedule::Action;
using dtrain::schedule::JobPrice;
using dtrain::schedule::RankPrice;
using dtrain::test_support::contains;

// 1000 samples' steps on 1-3 ranks: 40 ms of compute per step; the rest of a step grows with
// the ranks (0, 1.2 ms, 2.9 ms).
JobPrice three_rank_price() {
  JobPrice p;
  p.min_ranks = 1;
  p.max_ranks = 3;
  const double steps[] = {1000, 500, 334}, other[] = {0, 0.0012, 0.0029};
  for (int w = 1; w <= 3; ++w) {
    RankPrice r;
    r.ranks = w;
    r.steps = steps[w - 1];
    r.compute = 0.040;
    r.other = other[w - 1];
    r.step = r.compute + r.other;
    r.seconds = r.steps * r.step;
    r.exchange = w == 1 ? "-" : "ring, 4 MiB buckets";
    p.by_ranks.push_back(r);
  }
  return p;
}

TEST(Explain, ADecisionNamesTheModelsTermsBehindTheMarginalRank) {
  dtrain::schedule::Job job;
  job.name = "B";
  const Action a{120, 0, 2, 0, false, 1.0, "marginal gain on the model's prices: the cluster's ranks ran out"};
  const std::string s = dtrain::schedule::explain_action(a, job, three_rank_price());
  // Remaining 500 x 41.2 ms = 20.6 s at 2 ranks, 334 x 42.9 ms = 14.33 s at 3: 30% saved; compute
  // 20.0 s -> 13.36 s, the rest 0.6 s -> 0.97 s (1.2 ms -> 2.9 ms per step).
  EXPECT_TRUE(contains(s,
                       "t=2.0 min: job B gets 2 ranks (was 0), not 3: the third would save 30% "
                       "(remaining 20.6 s -> 14.3 s): compute falls from 20.0 s to 13.4 s (500 -> 334 steps of "
                       "40.0 ms) while communication and waits grow from 600.0 ms to 968.6 ms (per step 1.2 ms "
                       "-> 2.9 ms; ring, 4 MiB buckets); marginal gain on the model's prices"))
      << s;
  // Half the work left halves every term.
  EXPECT_TRUE(contains(dtrain::schedule::marginal_terms(three_rank_price(), 0.5, 2), "remaining 10.3 s -> 7.2 s"));
  const Action stop{300, 0, 0, 3, false, 0.5, "stopped: shorter jobs take the ranks"};
  EXPECT_EQ(dtrain::schedule::explain_action(stop, job, three_rank_price()),
            "t=5.0 min: job B stops (held 3 ranks): stopped: shorter jobs take the ranks");
  const Action most{0, 0, 3, 0, false, 1.0, "r"};
  EXPECT_TRUE(contains(dtrain::schedule::explain_action(most, job, three_rank_price()),
                       "t=0 s: job B gets 3 ranks (was 0), its most: 14.3 s left at 3 ranks; r"));
}

// Whether every tag of `svg` is closed in order (a small XML check: no attributes with '>').
bool well_formed(const std::string& svg) {
  std::vector<std::string> open;
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) return false;
    const std::string tag = svg.substr(at + 1, end - at - 1);
    if (tag.empty()) return false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  return open.empty();
}

TEST(ScheduleSvg, AGanttChartWithABarPerSegment) {
  const auto q = dtrain::schedule::test::hand_queue({{"L", 0, 2, {1000}, 30}, {"S&s", 100, 2, {100}, 30}});
  auto srtf = dtrain::schedule::make_policy("srtf", {});
  const auto r = dtrain::schedule::simulate(q.jobs, q.prices, 2, *srtf, {0});
  const std::string svg = dtrain::schedule::schedule_svg(r, q.jobs, "srtf <test>");
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(well_formed(svg)) << svg;
  EXPECT_FALSE(well_formed("<svg><rect></svg>"));
  // Three segments (L, S, L again), each a bar with a tooltip; L's restart shaded; names escaped.
  std::size_t titles = 0;
  for (std::size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) ++titles;
  EXPECT_EQ(titles, 3u);
  EXPECT_TRUE(contains(svg, "<title>L: 2 ranks, 3.3 min to 18.8 min</title>")) << svg;
  EXPECT_TRUE(contains(svg, "S&amp;s"));
  EXPECT_TRUE(contains(svg, "srtf &lt;test&gt;"));
  EXPECT_TRUE(contains(svg, "fill=\"#444\" opacity=\"0.6\""));
  EXPECT_EQ(dtrain::schedule::format_clock(0), "0 s");
  EXPECT_EQ(dtrain::schedule::rank_count(1), "1 rank");
}

}  // namespace
