// The parameter-server run record: its JSON round trip (the servers send it to worker 0), the
// errors of a corrupt one, the log record and the summary lines.
#include "ps/run_stats.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtrain::ps {
namespace {

ServerStats sample() {
  ServerStats s;
  s.server = 1;
  s.updates = 30;
  s.gradients = 90;
  s.seconds = 3;
  s.busy_seconds = 0.75;
  s.all_running_seconds = 2;
  s.all_running_gradients = 60;
  for (int v : {0, 0, 1, 3, 3}) s.gaps.add(v);
  for (int v : {2, 2, 2, 1}) s.taus.add(v);
  s.tau_mean_per_worker = {1.5, 2.0, 2.5};
  s.queue_depth.add(1);
  s.queue_depth.add(2);
  s.worker_wait_seconds = {0.5, 1.0, 0.0};
  s.worker_pushes = {30, 30, 30};
  return s;
}

TEST(RunStats, JsonRoundTripKeepsEveryField) {
  const ServerStats s = sample();
  const ServerStats back = server_stats_from_json(nlohmann::json::parse(to_json(s).dump()));
  EXPECT_EQ(to_json(back), to_json(s));
  EXPECT_EQ(back.gaps.counts(), (std::vector<std::int64_t>{2, 1, 0, 2}));
  EXPECT_DOUBLE_EQ(back.gaps.mean(), 7.0 / 5);
  EXPECT_DOUBLE_EQ(back.gradients_per_second(), 30);
}

TEST(RunStats, CorruptStatsNameTheField) {
  nlohmann::json j = to_json(sample());
  j.erase("tau_histogram");
  try {
    server_stats_from_json(j);
    FAIL() << "accepted stats without tau_histogram";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'tau_histogram'"), std::string::npos) << e.what();
  }
  j = to_json(sample());
  j["gap_histogram"] = nlohmann::json::array({1, -2});
  EXPECT_THROW(server_stats_from_json(j), InputError);
  j = to_json(sample());
  j["updates"] = "many";
  EXPECT_THROW(server_stats_from_json(j), InputError);
  EXPECT_THROW(server_stats_from_json(nlohmann::json::array()), InputError);
}

TEST(RunStats, RecordGivesGlobalStepsPerSecondAndEveryServer) {
  ServerStats other = sample();
  other.server = 0;
  other.gaps.add(5);
  const nlohmann::json r = ps_record({other, sample()}, 3);
  EXPECT_EQ(r["type"], "ps");
  EXPECT_DOUBLE_EQ(r["steps_per_second"].get<double>(), 10) << "60 gradients in 2 s from 3 workers";
  EXPECT_EQ(r["servers"].size(), 2U);
  EXPECT_EQ(r["gap_max"], 5);
  const std::string text = describe_ps_run({other, sample()}, 3);
  EXPECT_NE(text.find("10.00 global steps/s while all 3 workers ran"), std::string::npos) << text;
  EXPECT_NE(text.find("clock gap max 5 "), std::string::npos) << text;
  EXPECT_NE(text.find("histogram 0:2 1:1 3:2 5:1)"), std::string::npos) << text;
  EXPECT_NE(text.find("busy 25%"), std::string::npos) << text;
  EXPECT_NE(text.find("waited 0.5, 1.0, 0.0 s"), std::string::npos) << text;
}

}  // namespace
}  // namespace dtrain::ps
