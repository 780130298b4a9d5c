// End-to-end checkpoints through the dtrain command, in one process and under `mpirun -np 2`:
// a run stopped half way, or SIGKILLed between checkpoints, and resumed ends bit-identical to an
// uninterrupted run; SIGKILL of one rank ends the job with an error (no hang) and leaves no
// half-written checkpoint; a corrupt newest checkpoint is reported and skipped.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/checkpoint_test_util.h"
#include "checkpoint/cli/process.h"
#include "core/error.h"

namespace dtrain {
namespace {

using cktest::Child;
using cktest::TempDir;

bool has_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
}

#define SKIP_WITHOUT_DATA() \
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist package"

#define SKIP_WITHOUT_MPI() \
  if (std::string(DTRAIN_MPIEXEC).empty()) GTEST_SKIP() << "dtrain was built without MPI (DTRAIN_MPI=OFF)"

std::vector<std::string> command(int ranks, const std::string& args) {
  std::vector<std::string> argv;
  if (ranks > 0) {
    argv = {DTRAIN_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "-np",          std::to_string(ranks)};
  }
  argv.emplace_back(DTRAIN_BINARY);
  for (auto& a : cktest::split_args(args)) argv.push_back(a);
  return argv;
}

// Unique to this test process, so concurrent tests never pick each other's processes.
std::string tag(const std::string& name) { return name + "-" + std::to_string(::getpid()); }

// Environment of every run: a tag to find its processes by, and shared-memory MPI that works in
// containers without ptrace rights.
std::vector<std::string> env(const std::string& name) {
  return {"DTRAIN_TEST_TAG=" + tag(name), "OMPI_MCA_btl_vader_single_copy_mechanism=none"};
}

struct Outcome {
  std::optional<int> status;
  std::string output;
};

Outcome run(int ranks, const std::string& args, const TempDir& tmp, const std::string& name, double timeout = 300) {
  Child c(command(ranks, args), tmp.file(name + ".out"), env(name));
  Outcome r;
  r.status = c.wait(timeout);
  r.output = c.output();
  return r;
}

// The tensors of a checkpoint by name (model, optimizer and per-rank state).
std::map<std::string, std::vector<std::uint8_t>> tensors(const std::string& path) {
  const Checkpoint ck = Checkpoint::read(path);
  std::map<std::string, std::vector<std::uint8_t>> out;
  for (const StEntry& e : ck.file().tensors()) out[e.name].assign(ck.file().bytes(e).begin(), ck.file().bytes(e).end());
  return out;
}

double final_accuracy(const std::string& output) {
  const auto at = output.rfind("final test accuracy ");
  return at == std::string::npos ? -1 : std::stod(output.substr(at + 20));
}

// Steps done according to the metrics log's "step" records (--log-every 1).
std::int64_t steps_logged(const std::string& log) {
  std::ifstream in(log);
  std::string line;
  std::int64_t steps = 0;
  while (std::getline(in, line)) {
    const auto at = line.find("\"iteration\":");
    if (line.find("\"type\":\"step\"") != std::string::npos && at != std::string::npos) {
      steps = std::max<std::int64_t>(steps, std::atoll(line.c_str() + at + 12) + 1);
    }
  }
  return steps;
}

// Starts a run, waits until it has logged `kill_after` steps, then SIGKILLs the process found
// by `victim_env` (one MPI rank) or the whole run. Returns the run's exit status.
Outcome run_and_kill(int ranks, const std::string& args, const TempDir& tmp, const std::string& name,
                     std::int64_t kill_after, const std::vector<std::string>& victim_env) {
  const std::string log = tmp.file(name + ".jsonl");
  Child c(command(ranks, args + " --log " + log + " --log-every 1"), tmp.file(name + ".out"), env(name));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (c.running() && steps_logged(log) < kill_after && std::chrono::steady_clock::now() < deadline) {
    c.wait(0.002);
  }
  if (victim_env.empty()) {
    c.kill_group();
  } else {
    std::vector<std::string> vars = victim_env;
    vars.push_back("DTRAIN_TEST_TAG=" + tag(name));
    const pid_t victim = cktest::find_process_with_env(vars);
    EXPECT_GT(victim, 0) << "no process with the victim's environment";
    if (victim > 0) ::kill(victim, SIGKILL);
  }
  Outcome r;
  r.status = c.wait(120);  // the other rank must not hang
  r.output = c.output();
  return r;
}

// Every checkpoint file left in the directory loads; returns how many there are.
std::size_t expect_all_checkpoints_valid(const std::string& dir) {
  const auto all = CheckpointDir(dir).list();
  for (const std::string& path : all) {
    try {
      Checkpoint::read(path);
    } catch (const DataError& e) {
      ADD_FAILURE() << "a half-written checkpoint was left behind: " << e.what();
    }
  }
  return all.size();
}

// Each run adds --epochs.
const std::string kMlp =
    "train --model mlp --limit 1536 --batch 32 --threads 1 --eval-limit 1000 --prefetch 1 --keep 2";

TEST(CheckpointCli, KilledBetweenCheckpointsResumesBitIdentical) {
  SKIP_WITHOUT_DATA();
  TempDir tmp;
  const std::string a = tmp.file("a"), b = tmp.file("b");
  const std::string args = kMlp + " --epochs 2 --checkpoint-every 8 --checkpoint-dir ";
  const Outcome full = run(0, args + a + " --log ''", tmp, "full");
  ASSERT_TRUE(cktest::exited_with(full.status, 0)) << full.output;

  // 48 steps per epoch, 96 in all; SIGKILL after 44 (the newest checkpoint is then step 40).
  const Outcome killed = run_and_kill(0, args + b, tmp, "killed", 44, {});
  ASSERT_TRUE(killed.status && WIFSIGNALED(*killed.status)) << "the run finished before it was killed";
  ASSERT_GE(expect_all_checkpoints_valid(b), 1u);
  const std::string newest = CheckpointDir(b).list().front();
  ASSERT_NE(newest, CheckpointDir(b).path_for(96));

  // The newest checkpoint also got damaged: it is reported and the one before it used.
  auto bytes = cktest::read_bytes(newest);
  bytes[bytes.size() / 2] ^= 0x40;
  cktest::write_bytes(newest, bytes);
  const Outcome resumed = run(0, args + b + " --log '' --resume", tmp, "resumed");
  ASSERT_TRUE(cktest::exited_with(resumed.status, 0)) << resumed.output;
  EXPECT_NE(resumed.output.find("skipping checkpoint '" + newest + "'"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("do not match their checksum"), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
  EXPECT_EQ(tensors(CheckpointDir(b).path_for(96)), tensors(CheckpointDir(a).path_for(96)));
  EXPECT_EQ(final_accuracy(resumed.output), final_accuracy(full.output));
}

TEST(CheckpointCli, StopHalfWayThenContinueIsBitIdentical) {
  SKIP_WITHOUT_DATA();
  TempDir tmp;
  const std::string a = tmp.file("a"), b = tmp.file("b");
  // A step schedule does not depend on the number of epochs, so 1 + 1 epochs equal 2.
  const std::string args = kMlp + " --schedule step --log '' --checkpoint-dir ";
  ASSERT_TRUE(cktest::exited_with(run(0, args + a + " --epochs 2", tmp, "full").status, 0));
  ASSERT_TRUE(cktest::exited_with(run(0, args + b + " --epochs 1", tmp, "half").status, 0));
  const Outcome rest = run(0, args + b + " --epochs 2 --resume", tmp, "rest");
  ASSERT_TRUE(cktest::exited_with(rest.status, 0)) << rest.output;
  EXPECT_EQ(tensors(CheckpointDir(b).path_for(96)), tensors(CheckpointDir(a).path_for(96)));
}

TEST(CheckpointCli, FlagsAreChecked) {
  TempDir tmp;
  Outcome r = run(0, "train --resume --limit 256 --log ''", tmp, "noresume");
  EXPECT_TRUE(cktest::exited_with(r.status, 2)) << r.output;
  EXPECT_NE(r.output.find("need --checkpoint-dir"), std::string::npos) << r.output;
  SKIP_WITHOUT_DATA();
  r = run(0, "train --model mlp --limit 256 --log '' --checkpoint-dir " + tmp.file("c") + " --checkpoint-every 3x", tmp,
          "every");
  EXPECT_TRUE(cktest::exited_with(r.status, 2)) << r.output;
  EXPECT_NE(r.output.find("--checkpoint-every must be N or Nsteps"), std::string::npos) << r.output;
  // Resuming with a different model is refused, naming what differs.
  ASSERT_TRUE(cktest::exited_with(
      run(0, "train --model mlp --limit 256 --epochs 1 --log '' --checkpoint-dir " + tmp.file("d"), tmp, "mlp").status,
      0));
  r = run(0, "train --model lenet --limit 256 --epochs 1 --log '' --resume --checkpoint-dir " + tmp.file("d"), tmp,
          "lenet");
  EXPECT_TRUE(cktest::exited_with(r.status, 2)) << r.output;
  EXPECT_NE(r.output.find("model \"mlp\" (this run: \"lenet\")"), std::string::npos) << r.output;
  r = run(0, "export --checkpoint " + tmp.file("d") + " --format onnx --out " + tmp.file("m"), tmp, "onnx");
  EXPECT_TRUE(cktest::exited_with(r.status, 2)) << r.output;
  EXPECT_NE(r.output.find("valid: safetensors"), std::string::npos) << r.output;
  cktest::write_bytes(tmp.file("junk.safetensors"), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  r = run(0, "export --checkpoint " + tmp.file("junk.safetensors") + " --out " + tmp.file("m"), tmp, "junk");
  EXPECT_TRUE(cktest::exited_with(r.status, 1)) << r.output;
  EXPECT_NE(r.output.find("junk.safetensors: the header claims"), std::string::npos) << r.output;
}

const std::string kMpiMlp =
    "train --model mlp --limit 1536 --batch 16 --threads 1 --eval-limit 1000 --prefetch 1 --timeout 60";

TEST(CheckpointMpi, StopHalfWayThenContinueIsBitIdentical) {
  SKIP_WITHOUT_DATA();
  SKIP_WITHOUT_MPI();
  TempDir tmp;
  const std::string a = tmp.file("a"), b = tmp.file("b");
  const std::string args = kMpiMlp + " --schedule step --checkpoint-every 10 --log '' --checkpoint-dir ";
  const Outcome full = run(2, args + a + " --epochs 2", tmp, "full");
  ASSERT_TRUE(cktest::exited_with(full.status, 0)) << full.output;
  ASSERT_TRUE(cktest::exited_with(run(2, args + b + " --epochs 1", tmp, "half").status, 0));
  const Outcome rest = run(2, args + b + " --epochs 2 --resume", tmp, "rest");
  ASSERT_TRUE(cktest::exited_with(rest.status, 0)) << rest.output;
  EXPECT_EQ(tensors(CheckpointDir(b).path_for(96)), tensors(CheckpointDir(a).path_for(96)));
  EXPECT_EQ(final_accuracy(rest.output), final_accuracy(full.output));
}

// The kill test: LeNet under mpirun -np 2, one rank SIGKILLed at a random step.
TEST(CheckpointMpi, KilledRankEndsTheRunAndResumeFinishesExactly) {
  SKIP_WITHOUT_DATA();
  SKIP_WITHOUT_MPI();
  TempDir tmp;
  const std::string a = tmp.file("a"), b = tmp.file("b");
  const std::string args =
      "train --model lenet --limit 1024 --batch 16 --epochs 2 --threads 1 --eval-limit 2000 --prefetch 1 --timeout 60 "
      "--checkpoint-every 8 --keep 2 --checkpoint-dir ";
  const Outcome full = run(2, args + a + " --log ''", tmp, "full");
  ASSERT_TRUE(cktest::exited_with(full.status, 0)) << full.output;

  // 32 steps per epoch, 64 in all. Either rank may die, rank 0 (the writer) possibly mid-write.
  std::mt19937 gen(std::random_device{}());
  const std::int64_t kill_after = std::uniform_int_distribution<std::int64_t>(3, 56)(gen);
  const int victim = std::uniform_int_distribution<int>(0, 1)(gen);
  SCOPED_TRACE(::testing::Message() << "rank " << victim << " killed after step " << kill_after);
  const Outcome killed =
      run_and_kill(2, args + b, tmp, "killed", kill_after, {"OMPI_COMM_WORLD_RANK=" + std::to_string(victim)});
  ASSERT_TRUE(killed.status.has_value()) << "the job hung after a rank was killed";
  EXPECT_FALSE(cktest::exited_with(killed.status, 0)) << killed.output;
  expect_all_checkpoints_valid(b);

  const Outcome resumed = run(2, args + b + " --resume --log ''", tmp, "resumed");
  ASSERT_TRUE(cktest::exited_with(resumed.status, 0)) << resumed.output;
  EXPECT_TRUE(resumed.output.find("resumed from") != std::string::npos ||
              (kill_after < 8 && resumed.output.find("training from the start") != std::string::npos))
      << resumed.output;
  const double acc = final_accuracy(resumed.output), expected = final_accuracy(full.output);
  EXPECT_NEAR(acc, expected, 0.003);
  EXPECT_EQ(tensors(CheckpointDir(b).path_for(64)), tensors(CheckpointDir(a).path_for(64)));
  for (const auto& e : std::filesystem::directory_iterator(b)) {
    EXPECT_EQ(e.path().extension(), ".safetensors") << "left behind: " << e.path();
  }
}

}  // namespace
}  // namespace dtrain
