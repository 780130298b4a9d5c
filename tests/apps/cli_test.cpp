// End-to-end tests of the dtrain command: bad input gets a clear error naming the problem and the
// fix; a short training run writes the metrics log.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/command.h"

namespace {

using dtrain::test_support::CommandResult;

CommandResult run(const std::string& args) {
  return dtrain::test_support::run_command(std::string(DTRAIN_BINARY) + " " + args);
}

bool has_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
}

TEST(Cli, HelpExplainsEveryFlag) {
  const CommandResult r = run("train --help");
  EXPECT_EQ(r.status, 0);
  for (const char* flag : {"--model", "--data", "--epochs", "--batch", "--lr", "--momentum", "--optimizer",
                           "--schedule", "--augment", "--threads", "--seed", "--log"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(run("--help").status, 0);
  EXPECT_EQ(run("bench train --help").status, 0);
}

TEST(Cli, UnknownModelListsValidOnes) {
  const CommandResult r = run("bench train --model vgg --steps 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown model 'vgg'; valid: mlp, lenet, resnet20, resnet32, resnet56"), std::string::npos)
      << r.output;
}

// The value of `key=` in a bench line (NaN where absent).
double bench_field(const std::string& line, const std::string& key) {
  const std::size_t at = line.find(" " + key + "=");
  return at == std::string::npos ? std::nan("") : std::stod(line.substr(at + key.size() + 2));
}

TEST(Cli, BenchTrainReportsItsRateAgainstTheSgemmCeilingOfTheSameRun) {
  // The ceiling is measured on this machine (not a constant of another one), and peak_fraction is
  // the achieved rate over it.
  const CommandResult r = run("bench train --model mlp --steps 3 --warmup 1");
  ASSERT_EQ(r.status, 0) << r.output;
  const double gflops = bench_field(r.output, "gflops"), ceiling = bench_field(r.output, "sgemm_gflops");
  const double fraction = bench_field(r.output, "peak_fraction");
  ASSERT_GT(ceiling, 0) << r.output;
  ASSERT_GT(gflops, 0) << r.output;
  EXPECT_NEAR(fraction, gflops / ceiling, 0.0005 + 0.05 / ceiling) << r.output;  // rounding of the printed values
}

TEST(Cli, BenchTrainSamplesTheMachineStateThroughTheRun) {
  // 6 steps, a sample every 2: at the start, after steps 2 and 4, at the end (each absent where
  // both CPUs stayed busy, as with tests running beside this one).
  const CommandResult r = run("bench train --model mlp --steps 6 --warmup 1 --probe-every 2");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::size_t at = r.output.find("core_rt_samples_ns=");
  ASSERT_NE(at, std::string::npos) << r.output;
  std::string samples = r.output.substr(at + 19);
  samples = samples.substr(0, samples.find_first_of(" \n"));
  if (samples == "-") GTEST_SKIP() << "no sample: both CPUs busy";
  int count = 1;
  for (char ch : samples) count += ch == ',' ? 1 : 0;
  EXPECT_LE(count, 4) << samples;
  EXPECT_GT(std::stod(samples), 0) << samples;
  const CommandResult bad = run("bench train --model mlp --steps 2 --probe-every -1");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.output.find("--probe-every: Value -1 not in range 0 to 1000000"), std::string::npos) << bad.output;
}

TEST(Cli, BenchCoresSamplesTheRoundTripAndChecksItsCpus) {
  const CommandResult bad = run("bench cores --cpus 0,0");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--cpus needs two different CPUs"), std::string::npos) << bad.output;
  const CommandResult outside = run("bench cores --cpus 0,100000");
  EXPECT_EQ(outside.status, 2);
  EXPECT_NE(outside.output.find("CPU 100000 is not one this process may run on; allowed: "), std::string::npos)
      << outside.output;
  const CommandResult r = run("bench cores --seconds 0.2 --interval 0.1");
  if (r.output.find("no pair of cores") != std::string::npos) GTEST_SKIP() << "one CPU";
  EXPECT_EQ(r.status, 0) << r.output;
  // A summary line the scripts read, with at least one sample unless both CPUs stayed busy.
  EXPECT_NE(r.output.find("cores cpu_a="), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" samples="), std::string::npos) << r.output;
}

TEST(Cli, UnknownFlagIsNamed) {
  const CommandResult r = run("train --epoch 3");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--epoch"), std::string::npos) << r.output;
}

TEST(Cli, MissingDatasetNamesPathAndPackage) {
  const CommandResult r = run("train --data /nonexistent/fmnist --log ''");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("/nonexistent/fmnist"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dataset-fashion-mnist"), std::string::npos) << r.output;
}

TEST(Cli, UnknownOptimizerAndScheduleListValidOnes) {
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  CommandResult r = run("train --optimizer adagrad --limit 256 --log ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("valid: sgd, rmsprop, adam, lars, lamb"), std::string::npos) << r.output;
  r = run("train --schedule poly --limit 256 --log ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("valid: constant, step, cosine"), std::string::npos) << r.output;
  r = run("train --augment flop --limit 256 --log ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("flip"), std::string::npos) << r.output;
}

TEST(Cli, DivergingLossStopsNamingTheStep) {
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  const CommandResult r = run("train --model mlp --lr 1e12 --schedule constant --limit 2048 --epochs 1 --log ''");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("the loss became"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step"), std::string::npos) << r.output;
}

TEST(Cli, ShortRunWritesTheMetricsLog) {
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  const std::string log = ::testing::TempDir() + "/dtrain-cli-test.jsonl";
  const CommandResult r = run("train --model mlp --limit 4096 --epochs 2 --threads 1 --log " + log);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(log);
  std::string line;
  std::vector<nlohmann::json> records;
  while (std::getline(in, line)) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0]["type"], "config");
  EXPECT_EQ(records[2]["epoch"], 2);
  for (const char* phase : {"data", "forward", "backward", "update", "eval"}) {
    EXPECT_GE(records[2]["time"][phase].get<double>(), 0.0) << phase;
  }
  EXPECT_GT(records[2]["samples_per_s"].get<double>(), 0.0);
  EXPECT_EQ(records[2]["test_samples"], 10000);
  // 4096 samples, 2 epochs of an MLP: well above chance.
  EXPECT_GT(records[2]["test_accuracy"].get<double>(), 0.6);
}

TEST(Cli, SameSeedSameRun) {
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  const std::string a = ::testing::TempDir() + "/dtrain-seed-a.jsonl",
                    b = ::testing::TempDir() + "/dtrain-seed-b.jsonl";
  ASSERT_EQ(run("train --model lenet --limit 512 --epochs 1 --threads 1 --augment flip,translate:2 --log " + a).status,
            0);
  ASSERT_EQ(run("train --model lenet --limit 512 --epochs 1 --threads 1 --augment flip,translate:2 --log " + b).status,
            0);
  auto last = [](const std::string& path) {
    std::ifstream in(path);
    std::string line, prev;
    while (std::getline(in, line)) prev = line;
    return nlohmann::json::parse(prev);
  };
  EXPECT_EQ(last(a)["train_loss"], last(b)["train_loss"]);
  EXPECT_EQ(last(a)["test_loss"], last(b)["test_loss"]);
}

TEST(Cli, StragglerFlagsAreCheckedAndLogged) {
  EXPECT_NE(run("train --help").output.find("--slow-factor"), std::string::npos);
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  CommandResult r = run("train --model mlp --limit 256 --epochs 1 --log '' --slow-rank 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--slow-rank 1 is not a worker: give 0..0"), std::string::npos) << r.output;
  r = run("train --model mlp --limit 256 --epochs 1 --log '' --slow-mode random --slow-prob 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--slow-prob 2 is not in (0, 1]"), std::string::npos) << r.output;
  r = run("train --model mlp --limit 256 --epochs 1 --log '' --slow-mode random --slow-rank 0");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--slow-rank goes with --slow-mode persistent"), std::string::npos) << r.output;
  const std::string log = ::testing::TempDir() + "/dtrain-slow.jsonl";
  r = run("train --model mlp --limit 1024 --epochs 1 --threads 1 --slow-rank 0 --slow-factor 3 --log " + log);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const nlohmann::json config = nlohmann::json::parse(line);
  EXPECT_EQ(config["slowdown"]["mode"], "persistent");
  EXPECT_EQ(config["slowdown"]["rank"], 0);
  EXPECT_EQ(config["slowdown"]["factor"], 3.0);
  ASSERT_TRUE(std::getline(in, line));
  const nlohmann::json epoch = nlohmann::json::parse(line);
  // Every step but the first sleeps twice the compute of the step before, counted as forward.
  const nlohmann::json& t = epoch["time"];
  EXPECT_GT(t["forward"].get<double>(), 1.5 * (t["backward"].get<double>() + t["update"].get<double>()));
}

// --lr is the base batch's rate: linear scaling multiplies it by global / base batch, and the
// warmup starts at the base batch's rate (1/k of the scaled one).
TEST(Cli, LargeBatchRateIsScaledAndLogged) {
  EXPECT_NE(run("train --help").output.find("--lr-scaling"), std::string::npos);
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  CommandResult r = run("train --model mlp --limit 256 --epochs 1 --log '' --lr-scaling linear");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("give --base-batch N"), std::string::npos) << r.output;
  r = run("train --model mlp --limit 256 --epochs 2 --log '' --warmup-epochs 2");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("is at least the whole run"), std::string::npos) << r.output;
  r = run("train --model mlp --limit 256 --epochs 1 --log '' --lr-scaling cubic --base-batch 32");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("valid: none, linear, sqrt"), std::string::npos) << r.output;
  r = run("train --model mlp --limit 256 --epochs 1 --log '' --lr-scaling linear --base-batch -4");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--base-batch must be >= 1"), std::string::npos) << r.output;
  r = run("train --model mlp --limit 256 --epochs 1 --log '' --label-smoothing 1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--label-smoothing"), std::string::npos) << r.output;
  r = run("train --model mlp --limit 256 --epochs 1 --log '' --zero-gamma yes");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--zero-gamma must be on, off or auto, got 'yes'"), std::string::npos) << r.output;
  const std::string log = ::testing::TempDir() + "/dtrain-large-batch.jsonl";
  r =
      run("train --model mlp --limit 1024 --epochs 2 --threads 1 --batch 64 --lr 0.05 --lr-scaling linear "
          "--base-batch 16 --warmup-epochs 1 --schedule constant --label-smoothing 0.1 --log " +
          log);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("global batch 64: lr 0.2 (linear rule from --lr at batch 16), warmup from 0.25x"),
            std::string::npos)
      << r.output;
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const nlohmann::json config = nlohmann::json::parse(line);
  EXPECT_EQ(config["global_batch"], 64);
  EXPECT_EQ(config["base_batch"], 16);
  EXPECT_DOUBLE_EQ(config["scaled_lr"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(config["warmup_start"].get<double>(), 0.25);
  EXPECT_EQ(config["zero_gamma"], true) << "Goyal et al.'s recipe where the rate is scaled";
  EXPECT_EQ(config["decay_bn_bias"], false);
  EXPECT_DOUBLE_EQ(config["label_smoothing"].get<double>(), 0.1);
  nlohmann::json last;
  while (std::getline(in, line)) last = nlohmann::json::parse(line);
  EXPECT_NEAR(last["lr"].get<double>(), 0.2, 1e-12) << "after the warmup, the scaled rate";
}

// Akiba et al.'s pieces from the command line: rmsprop-warmup with its transition, batch-norm
// statistics from a population pass, ghost groups; bad values name their flag.
TEST(Cli, RmspropWarmupAndBatchNormFlags) {
  const std::string help = run("train --help").output;
  for (const char* flag : {"--bn-stats", "--sync-bn", "--bn-group", "--rmsprop-lr", "--transition-centre"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  const std::string base = "train --model resnet20 --limit 256 --eval-limit 100 --epochs 1 --threads 1 --batch 32 ";
  const std::vector<std::pair<std::string, std::string>> bad{
      {"--bn-group 1", "--bn-group 1 normalises every sample by itself"},
      {"--bn-group 12", "--bn-group 12 does not divide the per-rank batch of 32"},
      {"--bn-stats moving", "--bn-stats must be running, last-batch, population or population:N"},
      {"--sync-bn", "--sync-bn sums statistics over ranks: start dtrain under mpirun"},
      {"--optimizer rmsprop-warmup --transition-period 0", "--transition-period must be > 0"},
      {"--optimizer rmsprop-warmup --transition-centre -1", "--transition-centre must be > 0"},
      {"--lr -0.1", "the learning rate (--lr) must be >= 0"},
      {"--optimizer lars --trust-coefficient 0", "--trust-coefficient must be > 0"},
  };
  for (const auto& [flags, message] : bad) {
    const CommandResult r = run(base + "--log '' " + flags);
    EXPECT_EQ(r.status, 2) << flags;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << ": " << r.output;
  }
  const std::string log = ::testing::TempDir() + "/dtrain-rmsprop-warmup.jsonl";
  const CommandResult r = run(base +
                              "--optimizer rmsprop-warmup --lr 0.1 --transition-centre 0.5 --transition-period 0.5 "
                              "--schedule slow-start --bn-stats population:3 --bn-group 8 --log " +
                              log);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const nlohmann::json config = nlohmann::json::parse(line);
  EXPECT_EQ(config["bn_stats"], "population:3");
  EXPECT_EQ(config["bn_group"], 8);
  EXPECT_DOUBLE_EQ(config["transition_centre"].get<double>(), 0.5);
  nlohmann::json last;
  while (std::getline(in, line)) last = nlohmann::json::parse(line);
  EXPECT_GT(last["bn_stats_seconds"].get<double>(), 0);
  // The last of 8 steps is at epoch 7/8, the paper's epoch 78.75 of 90: slow-start's third phase.
  EXPECT_NEAR(last["lr"].get<double>(), 0.1 * 0.01, 1e-12);
}

TEST(Example, ReadmeExampleTrains) {
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package";
  const std::string cmd = std::string(DTRAIN_EXAMPLE) + " /usr/share/datasets/fashion-mnist 1 8192 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::array<char, 512> buf{};
  std::string out;
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  EXPECT_EQ(pclose(p), 0) << out;
  const auto at = out.find("test accuracy ");
  ASSERT_NE(at, std::string::npos) << out;
  EXPECT_GT(std::stod(out.substr(at + 14)), 0.7) << out;
}

}  // namespace
