// dtrain explain on sample metrics logs: the measured terms per step, the model's, and what limits
// scaling; clear errors for files that are not metrics logs.
#include "perfmodel/explain.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

std::string write_log(const std::string& name, const std::vector<nlohmann::json>& records) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream f(path);
  for (const auto& r : records) f << r.dump() << '\n';
  return path.string();
}

nlohmann::json config(int ranks) {
  return {{"type", "config"},          {"model", "lenet"},    {"dataset", "fashion-mnist"}, {"batch", 64},
          {"world_size", ranks},       {"allreduce", "ring"}, {"comm_dtype", "f32"},        {"bucket_mb", 1.0},
          {"double_buffering", false}, {"accumulate", 1}};
}

// An epoch of `steps` steps whose per-step phases are (data, forward, backward, comm, update) ms.
nlohmann::json epoch(int index, int steps, std::array<double, 5> ms, double other_ms) {
  double total = other_ms;
  for (double x : ms) total += x;
  const double n = steps / 1e3;
  return {{"type", "epoch"},
          {"epoch", index},
          {"iteration", index * steps},
          {"epoch_seconds", total * n},
          {"time",
           {{"data", ms[0] * n},
            {"forward", ms[1] * n},
            {"backward", ms[2] * n},
            {"comm", ms[3] * n},
            {"update", ms[4] * n},
            {"eval", 1.0}}}};
}

TEST(Explain, MeasuredTermsPerStepLeaveOutTheWarmUpEpoch) {
  const std::string log =
      write_log("dtrain_explain_1.jsonl", {config(2), epoch(1, 100, {1, 30, 60, 40, 2}, 1),
                                           epoch(2, 100, {0, 10, 20, 20, 1}, 1), epoch(3, 100, {0, 10, 20, 20, 1}, 1)});
  const Explanation e = explain_run(read_metrics_log(log), "");
  EXPECT_EQ(e.epochs_used, 2);
  EXPECT_NEAR(e.measured_step, 0.052, 1e-9);
  EXPECT_NEAR(e.measured.forward, 0.010, 1e-9);
  EXPECT_NEAR(e.measured.comm, 0.020, 1e-9);
  EXPECT_NEAR(e.measured_other, 0.001, 1e-9);
  EXPECT_FALSE(e.has_model);
  EXPECT_EQ(e.limit, "exposed communication");
  EXPECT_NE(e.text.find("limits scaling: exposed communication (38% of the step)"), std::string::npos) << e.text;
  std::filesystem::remove(log);
}

TEST(Explain, WithAProfileNamesLatencyOrBandwidthAndTheScalingLoss) {
  const auto profile_path = std::filesystem::temp_directory_path() / "dtrain_explain_profile.json";
  {
    std::ofstream f(profile_path);
    f << profile_to_json(testing::test_profile(2, 1e-6, 1e8, 1e10, 1e10)).dump();
  }
  const std::string log = write_log("dtrain_explain_2.jsonl", {config(2), epoch(1, 50, {0, 10, 20, 300, 1}, 0)});
  const Explanation e = explain_run(read_metrics_log(log), profile_path.string());
  ASSERT_TRUE(e.has_model);
  EXPECT_GT(e.predicted_step, 0);
  EXPECT_GT(e.one_worker_step, 0);
  EXPECT_LT(e.one_worker_step, e.predicted_step);    // 13 MB of gradients at 100 MB/s cost two workers
  EXPECT_GT(e.comm_allreduce, 10 * e.comm_latency);  // bandwidth-bound
  EXPECT_EQ(e.limit, "exposed communication");
  EXPECT_NE(e.text.find("bandwidth-bound"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("--comm-dtype f16 halves the bytes"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("efficiency"), std::string::npos) << e.text;
  std::filesystem::remove(log);
  std::filesystem::remove(profile_path);
}

// A parameter-server run: 4 ranks are 3 workers and a server; the log's "ps" record says who waited.
nlohmann::json ps_config() {
  nlohmann::json c = config(4);
  c["mode"] = "ps";
  c["servers"] = 1;
  c["sync"] = "bsp";
  return c;
}

nlohmann::json ps_record(double busy_seconds, std::vector<double> waits) {
  return {{"type", "ps"},
          {"steps_per_second", 12.5},
          {"gap_max", 0},
          {"tau_mean", 0.0},
          {"worker_wait_seconds", waits},
          {"servers", {{{"seconds", 10.0}, {"busy_seconds", busy_seconds}}}}};
}

TEST(Explain, ParameterServerRunsNameTheServersOrTheSlowestWorker) {
  const auto profile_path = std::filesystem::temp_directory_path() / "dtrain_explain_ps_profile.json";
  {
    std::ofstream f(profile_path);
    f << profile_to_json(testing::test_profile(4, 1e-6, 1e9, 1e10, 1e10)).dump();
  }
  const auto explain = [&](const nlohmann::json& ps) {
    const std::string log =
        write_log("dtrain_explain_ps.jsonl", {ps_config(), epoch(1, 50, {0, 10, 20, 50, 0}, 0), ps});
    Explanation e = explain_run(read_metrics_log(log), profile_path.string());
    std::filesystem::remove(log);
    return e;
  };
  // Workers that waited unequally under BSP: the slowest holds the others.
  Explanation e = explain(ps_record(1.0, {9.0, 1.0, 1.5}));
  EXPECT_TRUE(e.parameter_server);
  EXPECT_NE(e.text.find("3 worker(s) x batch 64, 1 parameter server(s), sync bsp, pushes in f32"), std::string::npos)
      << e.text;
  EXPECT_NE(e.text.find("waiting for the servers"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("12.50 global steps/s while every worker ran (model "), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("--sync ssp"), std::string::npos) << e.text;
  EXPECT_DOUBLE_EQ(e.ps_busy_fraction, 0.1);
  // Busy servers: more of them.
  e = explain(ps_record(8.0, {2.0, 2.0, 2.0}));
  EXPECT_NE(e.text.find("the servers are busy 80% of the time: more --servers"), std::string::npos) << e.text;
  // Neither: the bytes.
  e = explain(ps_record(1.0, {2.0, 2.0, 2.0}));
  EXPECT_NE(e.text.find("--comm-dtype bf16 halves the pushes"), std::string::npos) << e.text;
  EXPECT_EQ(explanation_json(e)["ps_steps_per_second"], 12.5);
  std::filesystem::remove(profile_path);
}

TEST(Explain, ComparesTheRunsMachineStateWithTheProfiles) {
  const auto profile_path = std::filesystem::temp_directory_path() / "dtrain_explain_state.json";
  Profile profile = testing::test_profile(2, 1e-6, 1e9, 1e10, 1e10);
  profile.node.core_round_trip = testing::q(60e-9);
  {
    std::ofstream f(profile_path);
    f << profile_to_json(profile).dump();
  }
  for (const auto& [run_ns, expected] : {std::pair{340.0, "a different state"}, std::pair{70.0, "the same state"}}) {
    nlohmann::json c = config(2);
    c["core_round_trip_ns"] = run_ns;
    const std::string log = write_log("dtrain_explain_state.jsonl", {c, epoch(1, 50, {0, 10, 20, 5, 1}, 0)});
    const Explanation e = explain_run(read_metrics_log(log), profile_path.string());
    EXPECT_DOUBLE_EQ(e.run_core_round_trip, run_ns * 1e-9);
    EXPECT_DOUBLE_EQ(e.profile_core_round_trip, 60e-9);
    EXPECT_NE(e.text.find(fmt::format("takes {:.0f} ns there and back in this run, 60 ns", run_ns)), std::string::npos)
        << e.text;
    EXPECT_NE(e.text.find(expected), std::string::npos) << e.text;
    std::filesystem::remove(log);
  }
  std::filesystem::remove(profile_path);
}

TEST(Explain, UsesThePredictionTheRunLogged) {
  nlohmann::json c = config(1);
  c["predicted"] = {
      {"step_s", 0.05},
      {"phases_s", {{"data", 0.0}, {"forward", 0.02}, {"backward", 0.028}, {"comm", 0.0}, {"update", 0.002}}}};
  c["profile"] = {{"name", "calibrated-x"}, {"spec", "/nonexistent/profile.json"}};
  const std::string log = write_log("dtrain_explain_3.jsonl", {c, epoch(1, 10, {0, 20, 30, 0, 2}, 0)});
  const Explanation e = explain_run(read_metrics_log(log), "");
  ASSERT_TRUE(e.has_model);
  EXPECT_DOUBLE_EQ(e.predicted_step, 0.05);
  EXPECT_NE(e.text.find("model -3.8%"), std::string::npos) << e.text;
  EXPECT_NE(e.text.find("one worker: nothing to scale"), std::string::npos) << e.text;
  std::filesystem::remove(log);
}

// A bf16 run is priced at the profile's bf16 rates, as `dtrain train --precision bf16 --profile`
// priced it; a profile without them names the missing field.
TEST(Explain, PricesABf16RunAtTheProfilesBf16Rates) {
  Profile profile = testing::test_profile();
  PrecisionRates bf16;
  bf16.conv2d = bf16.linear = testing::q(4e12);  // 4x the f32 rates of test_profile
  profile.device.precisions.emplace_back("bf16", bf16);
  const auto profile_path = std::filesystem::temp_directory_path() / "dtrain_explain_bf16_profile.json";
  {
    std::ofstream f(profile_path);
    f << profile_to_json(profile).dump();
  }
  nlohmann::json c = config(1);
  const std::string f32_log = write_log("dtrain_explain_f32.jsonl", {c, epoch(1, 10, {0, 20, 30, 0, 2}, 0)});
  c["precision"] = "bf16";
  const std::string bf16_log = write_log("dtrain_explain_bf16.jsonl", {c, epoch(1, 10, {0, 20, 30, 0, 2}, 0)});
  const Explanation f32 = explain_run(read_metrics_log(f32_log), profile_path.string());
  const Explanation half = explain_run(read_metrics_log(bf16_log), profile_path.string());
  ASSERT_TRUE(f32.has_model && half.has_model);
  // LeNet's compute is its convolutions and linear layers: a quarter of the time at 4x the rate,
  // plus the 2-byte activations' memory terms, which test_profile makes negligible.
  EXPECT_NEAR(half.predicted.forward, f32.predicted.forward / 4, 0.02 * f32.predicted.forward);
  EXPECT_NEAR(half.predicted.backward, f32.predicted.backward / 4, 0.02 * f32.predicted.backward);
  profile.device.precisions.clear();
  {
    std::ofstream f(profile_path);
    f << profile_to_json(profile).dump();
  }
  try {
    explain_run(read_metrics_log(bf16_log), profile_path.string());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lacks 'device.precisions.bf16'"), std::string::npos) << e.what();
  }
  std::filesystem::remove(f32_log);
  std::filesystem::remove(bf16_log);
  std::filesystem::remove(profile_path);
}

TEST(Explain, NotAMetricsLogIsNamed) {
  EXPECT_THROW(read_metrics_log("/nonexistent/log.jsonl"), InputError);
  const std::string junk = write_log("dtrain_explain_4.jsonl", {});
  {
    std::ofstream f(junk);
    f << "epoch 1 loss 0.3\n";
  }
  try {
    read_metrics_log(junk);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(":1: not a JSON record"), std::string::npos) << e.what();
  }
  const std::string no_epoch = write_log("dtrain_explain_5.jsonl", {config(2)});
  try {
    read_metrics_log(no_epoch);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("no \"epoch\" record yet"), std::string::npos) << e.what();
  }
  std::filesystem::remove(junk);
  std::filesystem::remove(no_epoch);
}

}  // namespace
}  // namespace dtrain::perf
