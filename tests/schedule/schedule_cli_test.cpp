// `dtrain schedule` end to end: the comparison of every policy equals the library's simulation of
// the same queue, the tables, the explanation and the chart come out, and bad input fails with
// the problem and the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "schedule/cluster.h"
#include "schedule/policy.h"
#include "schedule/simulator.h"
#include "schedule/trace.h"
#include "schedule_test_util.h"
#include "support/command.h"
#include "support/temp_dir.h"
#include "support/text.h"

namespace {

using dtrain::test_support::CommandResult;
using dtrain::test_support::contains;

const std::string kSmallTrace = std::string(DTRAIN_SCHEDULE_DATA) + "/tiresias_small.csv";

CommandResult schedule_command(const std::string& args) {
  return dtrain::test_support::run_command(std::string("DTRAIN_PROFILES=") + DTRAIN_PROFILES_DIR + " " + DTRAIN_BINARY +
                                           " schedule " + args);
}

TEST(ScheduleCli, JsonOfEveryPolicyEqualsTheLibrarysSimulation) {
  const CommandResult r =
      schedule_command("--trace " + kSmallTrace + " --nodes 1 --profile 8xv100-nvlink+ib-edr --policy all --json");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["policies"].size(), 5u);

  dtrain::schedule::test::use_source_profiles();
  dtrain::schedule::Cluster c;
  c.profile = "8xv100-nvlink+ib-edr";
  const dtrain::perf::Profile profile = dtrain::schedule::resolve_cluster(c);
  const auto jobs = dtrain::schedule::read_trace(kSmallTrace, c.ranks());
  const auto prices = dtrain::schedule::price_jobs(jobs, c, profile);
  dtrain::schedule::PolicyOptions options;
  options.thresholds = dtrain::schedule::default_thresholds(jobs, prices);
  EXPECT_EQ(j["tiresias_thresholds"].get<std::vector<double>>(), options.thresholds);
  for (const nlohmann::json& p : j["policies"]) {
    auto policy = dtrain::schedule::make_policy(p["policy"].get<std::string>(), options);
    const auto expected = dtrain::schedule::simulate(jobs, prices, c.ranks(), *policy, {600});
    EXPECT_DOUBLE_EQ(p["mean_jct_s"].get<double>(), expected.mean_jct) << p["policy"];
    EXPECT_DOUBLE_EQ(p["makespan_s"].get<double>(), expected.makespan) << p["policy"];
    EXPECT_EQ(p["preemptions"].get<int>(), expected.preemptions) << p["policy"];
    EXPECT_EQ(p["actions"].size(), expected.actions.size()) << p["policy"];
    ASSERT_EQ(p["jobs"].size(), 6u);
    for (const nlohmann::json& job : p["jobs"]) EXPECT_GT(job["end_s"].get<double>(), job["submit_s"].get<double>());
  }
  // On this queue the model's allocation beats first in, first out.
  EXPECT_LT(j["policies"][4]["mean_jct_s"].get<double>(), j["policies"][0]["mean_jct_s"].get<double>());
}

TEST(ScheduleCli, TablesExplanationAndChart) {
  dtrain::test_support::TempDir dir;
  const std::string svg = dir.file("gantt.svg");
  const CommandResult r = schedule_command("--trace " + kSmallTrace +
                                           " --nodes 1 --ranks-per-node 8 --profile 8xv100-nvlink+ib-edr "
                                           "--policy all --detail optimus --probe-seconds 30 --explain --svg " +
                                           svg);
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* part :
       {"cluster: 1 nodes x 8 ranks = 8 ranks", "6 jobs (Tiresias format)", "optimus: 5 probe runs of 30.0 s each",
        "policy       mean JCT   makespan  utilisation", "jobs under optimus:", "trace duration",
        "decisions of optimus", "probes at 1 rank (was 0)", "communication and waits", "Gantt chart of optimus: "}) {
    EXPECT_TRUE(contains(r.output, part)) << part << " not in:\n" << r.output;
  }
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(text.str().starts_with("<svg")) << svg;
  EXPECT_TRUE(contains(text.str(), "optimus: 6 jobs on 8 ranks"));
  // One policy: its table, then its line of the comparison.
  const CommandResult one =
      schedule_command("--trace " + kSmallTrace + " --nodes 2 --profile 8xv100-nvlink+ib-edr --policy tiresias");
  ASSERT_EQ(one.status, 0) << one.output;
  EXPECT_TRUE(contains(one.output, "jobs under tiresias:"));
  EXPECT_FALSE(contains(one.output, "\nfifo "));
}

TEST(ScheduleCli, BadInputNamesTheProblemAndTheFix) {
  dtrain::test_support::TempDir dir;
  std::ofstream(dir.file("bad.csv")) << "name,model,dataset,epochs,batch,min_ranks,max_ranks,submit_time,priority\n"
                                        "a,resnet20,,1,lots,1,2,0,0\n";
  const CommandResult bad =
      schedule_command("--trace " + dir.file("bad.csv") + " --nodes 1 --profile 8xv100-nvlink+ib-edr");
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(contains(bad.output, "row 1 (line 2): field 'batch' is 'lots', not a whole number")) << bad.output;
  const CommandResult policy =
      schedule_command("--trace " + kSmallTrace + " --profile 8xv100-nvlink+ib-edr --policy x");
  EXPECT_EQ(policy.status, 2);
  EXPECT_TRUE(contains(policy.output, "unknown policy 'x'; valid: fifo, srtf, tiresias, optimus, model, all"));
  const CommandResult ranks =
      schedule_command("--trace " + kSmallTrace + " --ranks-per-node 4 --profile 8xv100-nvlink+ib-edr");
  EXPECT_EQ(ranks.status, 2);
  EXPECT_TRUE(contains(ranks.output, "give --ranks-per-node 8 or a profile with 4x its device")) << ranks.output;
  const CommandResult thresholds =
      schedule_command("--trace " + kSmallTrace + " --profile 8xv100-nvlink+ib-edr --thresholds 100,50");
  EXPECT_EQ(thresholds.status, 2);
  EXPECT_TRUE(contains(thresholds.output, "--thresholds must be positive rank-seconds in ascending order"));
}

}  // namespace
