// `dtrain predict` end to end: the table, JSON and SVG outputs, and clear errors for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/command.h"

namespace {

using dtrain::test_support::CommandResult;

CommandResult predict(const std::string& args) {
  return dtrain::test_support::run_command(std::string("DTRAIN_PROFILES=") + DTRAIN_PROFILES_DIR + " " + DTRAIN_BINARY +
                                           " predict " + args);
}

void expect_contains(const CommandResult& r, const std::string& part) {
  EXPECT_NE(r.output.find(part), std::string::npos) << "'" << part << "' not in:\n" << r.output;
}

TEST(PredictCli, TablePerConfigurationAndTheBest) {
  const CommandResult r = predict(
      "--model resnet50 --dataset imagenet --workers 8,64,256,1024 --batch-per-worker 32 --profile p100+ib-fdr "
      "--sync bsp --allreduce ring,tree,butterfly,onetoall");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_contains(r, "25.56 M parameters");
  expect_contains(r, "InfiniBand FDR 4x");
  for (const char* column : {"workers", "exchange", "compute", "data", "comm (exposed)", "step", "epoch", "90 epochs",
                             "speedup", "efficiency", "device-h", "bottleneck"}) {
    expect_contains(r, column);
  }
  for (const char* row : {"   1024  onetoall", "      8  ring", "     64  tree", "    256  butterfly"}) {
    expect_contains(r, row);
  }
  expect_contains(r, "best: 8 workers:");
  expect_contains(r, "1024 workers:");
}

TEST(PredictCli, JsonAndPlot) {
  const auto svg = std::filesystem::temp_directory_path() / "dtrain_predict_test.svg";
  const CommandResult r = predict(
      "--model resnet20 --dataset cifar10 --workers 1,2,4 --batch-per-worker 64 "
      "--profile 2xskylake-sp-upi+eth-10g --allreduce ring,butterfly --comm-dtype f16 "
      "--double-buffering --epochs 3 --json --plot " +
      svg.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["runs"].size(), 5u);  // one worker once, then 2 exchanges x 2 worker counts
  EXPECT_EQ(j["runs"][0]["workers"], 1);
  EXPECT_DOUBLE_EQ(j["runs"][0]["speedup"].get<double>(), 1.0);
  EXPECT_EQ(j["best"].size(), 3u);
  EXPECT_EQ(j["profile"]["node"]["accelerators"], 2);
  for (const auto& run : j["runs"]) {
    EXPECT_GT(run["step_s"].get<double>(), 0);
    EXPECT_EQ(run["epochs"], 3);
  }
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str().rfind("<svg", 0), 0u);
  EXPECT_NE(text.str().find("ring"), std::string::npos);
  EXPECT_NE(text.str().find("scaling efficiency"), std::string::npos);
  std::filesystem::remove(svg);
}

TEST(PredictCli, PublishedRuns) {
  const CommandResult r = predict("--published");
  ASSERT_EQ(r.status, 0) << r.output;
  expect_contains(r, "He et al. 2016");
  expect_contains(r, "Goyal et al. 2017");
  expect_contains(r, "published 29.0 h");
  expect_contains(r, "profile a100 in f16, 1 x batch 256");
  expect_contains(r, "published 2470");
}

TEST(PredictCli, PrecisionPricesTheTensorCoresAndNamesWhatIsMissing) {
  const CommandResult f32 = predict("--profile 8xa100-nvlink3 --workers 8 --json");
  const CommandResult bf16 = predict("--profile 8xa100-nvlink3 --workers 8 --precision bf16 --json");
  ASSERT_EQ(f32.status, 0) << f32.output;
  ASSERT_EQ(bf16.status, 0) << bf16.output;
  const double f32_step = nlohmann::json::parse(f32.output)["runs"][0]["step_s"];
  const double bf16_step = nlohmann::json::parse(bf16.output)["runs"][0]["step_s"];
  EXPECT_LT(bf16_step, f32_step / 3);  // 312 against 19.5 TFLOP/s peaks, memory-bound layers at 2 bytes
  CommandResult r = predict("--profile 8xa100-nvlink3 --workers 8 --precision fp8");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "lacks 'device.precisions.fp8'");
  expect_contains(r, "it has bf16, f16, tf32 and f32");
  r = predict("--profile 8xa100-nvlink3 --workers 8 --precision half");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "unknown precision 'half'; valid: f32, tf32, bf16, f16, fp8");
}

TEST(PredictCli, BadInputNamesWhatIsValid) {
  CommandResult r = predict("--model vgg --profile p100+ib-fdr");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "unknown model 'vgg'; valid: mlp, lenet, resnet20, resnet32, resnet56, resnet50");
  r = predict("--profile p200+ib-fdr");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "unknown hardware 'p200' in --profile; valid: devices: a100, h100, h200, knl, p100");
  r = predict("--profile p100+ib-fdr --workers 0,8");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "--workers: 0 is not valid; workers must be >= 1");
  r = predict("--profile p100+ib-fdr --workers 8,many");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "--workers: 'many' is not a whole number");
  r = predict("--profile p100+ib-fdr --allreduce ring,gossip");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "unknown --allreduce 'gossip'; valid: ring, tree, butterfly, onetoall, mpi, shm, auto, ps");
  r = predict("--profile p100 --workers 2");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "has no network; add one, e.g. --profile p100+ib-edr");
  r = predict("--workers 2");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "--profile is required");
  r = predict("--profile p100+ib-fdr --dataset coco");
  EXPECT_EQ(r.status, 2);
  expect_contains(r, "valid: imagenet, cifar10, fashion-mnist, mnist");
}

TEST(PredictCli, BadProfileFileNamesTheField) {
  const auto path = std::filesystem::temp_directory_path() / "dtrain_bad_profile.json";
  std::ofstream(path) << R"({"dtrain_profile": 1, "name": "bad", "link": {"name": "x", "latency": {"value": -1,
    "source": "me"}, "bandwidth": {"value": 1e9, "source": "me"}}})";
  const CommandResult r = predict("--profile p100+" + path.string() + " --workers 2");
  EXPECT_EQ(r.status, 1);
  expect_contains(r, "'link.latency.value' is -1; it must be >= 0 (seconds per message)");
  std::filesystem::remove(path);
}

}  // namespace
