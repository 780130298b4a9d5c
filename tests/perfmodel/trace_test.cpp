// Traces: the measured timeline of dtrain train --trace and the predicted one of dtrain predict
// --trace are well-formed Chrome traces with the same lanes and the expected events.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <tuple>

#include "autograd/ops/loss.h"
#include "nn/models/models.h"
#include "perfmodel/layer_trace.h"
#include "perfmodel/predicted_trace.h"
#include "perfmodel_test_util.h"
#include "support/command.h"
#include "train/trace_recorder.h"

namespace dtrain {
namespace {

// Every complete event has the fields chrome://tracing needs; returns them.
std::vector<nlohmann::json> complete_events(const nlohmann::json& trace) {
  EXPECT_TRUE(trace.contains("traceEvents"));
  std::vector<nlohmann::json> out;
  std::set<std::pair<int, int>> named_threads;
  for (const auto& e : trace["traceEvents"]) {
    EXPECT_TRUE(e.contains("ph")) << e.dump();
    if (e.value("ph", "") == "M") {
      if (e["name"] == "thread_name") named_threads.emplace(e["pid"].get<int>(), e["tid"].get<int>());
      continue;
    }
    EXPECT_EQ(e["ph"], "X");
    for (const char* f : {"name", "cat", "ts", "dur", "pid", "tid"}) EXPECT_TRUE(e.contains(f)) << f << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0);
    out.push_back(e);
  }
  // Every process and thread an event is on is named (rank, lane).
  for (const auto& e : out) EXPECT_EQ(named_threads.count({e["pid"].get<int>(), e["tid"].get<int>()}), 1u);
  return out;
}

std::set<std::string> names_of(const std::vector<nlohmann::json>& events, const std::string& category, int pid = 0) {
  std::set<std::string> out;
  for (const auto& e : events) {
    if (e["cat"] == category && e["pid"] == pid) out.insert(e["name"].get<std::string>());
  }
  return out;
}

TEST(Trace, PredictedTimelineHasEveryLayerBucketAndUpdatePerRank) {
  const perf::Workload w = perf::describe_zoo_model("lenet", "fashion-mnist");
  perf::RunConfig c;
  c.workers = 4;
  c.batch_per_worker = 16;
  const perf::StepPrediction s = perf::predict_step(w, perf::testing::test_profile(4, 1e-5, 1e9), c);
  const auto events = complete_events(perf::predicted_trace(s, c.workers, 3));
  std::set<int> pids;
  for (const auto& e : events) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids.size(), 4u);
  std::set<std::string> layers;
  for (const LayerSummary& l : w.layers) layers.insert(l.path);
  EXPECT_EQ(names_of(events, "forward"), layers);
  EXPECT_EQ(names_of(events, "backward"), layers);
  EXPECT_EQ(names_of(events, "allreduce").size(), s.buckets.size());
  EXPECT_EQ(names_of(events, "update"), std::set<std::string>{"update"});
  int steps = 0;
  for (const auto& e : events) {
    if (e["cat"] == "allreduce") {
      EXPECT_EQ(e["tid"], 2);
    }
    if (e["cat"] == "forward") {
      EXPECT_EQ(e["tid"], 1);
    }
    steps += e["cat"] == "step" && e["pid"] == 0;
  }
  EXPECT_EQ(steps, 3);
}

TEST(Trace, RecorderSeesLayersBucketsAndTheWindowOfSteps) {
  Rng rng(0);
  auto model = make_model("mlp", ModelInput{}, rng);
  TraceRecorder rec(*model, 0, 1, 2);  // steps 1 and 2
  rec.install();
  TrainerState s;
  s.iterations_per_epoch = 10;
  rec.on_start(s);
  std::vector<float> xv(4 * 784, 0.5f);
  const Tensor x = Tensor::from_vector(xv, {4, 1, 28, 28});
  const Tensor y = Tensor::from_labels({1, 2, 3, 4});
  for (int step = 0; step < 4; ++step) {
    Variable loss = ops::softmax_cross_entropy((*model)(Variable(x)), y);
    loss.backward();
    std::thread comm([&] {  // the communication thread reports its buckets
      rec.bucket_begin(0, 100);
      rec.bucket_end(0);
    });
    comm.join();
    ++s.iteration;
    ++s.epoch_iteration;
    rec.on_iteration(s);
  }
  const auto events = complete_events(chrome_trace(rec.events(), "rank"));
  std::set<std::string> steps = names_of(events, "step");
  EXPECT_EQ(steps, (std::set<std::string>{"step 1", "step 2"}));
  EXPECT_EQ(names_of(events, "forward"), (std::set<std::string>{"flatten", "f1", "relu1", "f2", "relu2", "f3"}));
  const std::set<std::string> backward = names_of(events, "backward");
  for (const char* l : {"f1", "f2", "f3", "relu1", "relu2"}) EXPECT_EQ(backward.count(l), 1u) << l;
  EXPECT_EQ(names_of(events, "allreduce"), std::set<std::string>{"bucket 0"});
  EXPECT_EQ(names_of(events, "update"), std::set<std::string>{"update"});
  // Round trip of what ranks send to rank 0, and the file rank 0 writes.
  const auto path = std::filesystem::temp_directory_path() / "dtrain_trace_test.json";
  write_rank_traces(path.string(), rec, 0, {}, {{"model", "mlp"}});
  std::ifstream in(path);
  const nlohmann::json file = nlohmann::json::parse(in);
  EXPECT_EQ(complete_events(file).size(), events.size());
  EXPECT_EQ(file["otherData"]["model"], "mlp");
  std::filesystem::remove(path);
}

// A residual block's own add and ReLUs get forward spans too, named as the model's layer list
// names them, so the measured forward lane has every layer the predicted one has.
TEST(Trace, RecorderNamesTheOpsACompositeRunsInItsForward) {
  Rng rng(0);
  auto model = make_model("resnet20", ModelInput{3, 32, 32, 10}, rng);
  TraceRecorder rec(*model, 0, 1, 1);  // step 1
  rec.install();
  TrainerState s;
  s.iterations_per_epoch = 10;
  rec.on_start(s);
  std::vector<float> xv(2 * 3 * 32 * 32, 0.5f);
  const Tensor x = Tensor::from_vector(xv, {2, 3, 32, 32});
  const Tensor y = Tensor::from_labels({1, 2});
  for (int step = 0; step < 3; ++step) {
    Variable loss = ops::softmax_cross_entropy((*model)(Variable(x)), y);
    loss.backward();
    ++s.iteration;
    ++s.epoch_iteration;
    rec.on_iteration(s);
  }
  const auto events = complete_events(chrome_trace(rec.events(), "rank"));
  const std::set<std::string> forward = names_of(events, "forward");
  for (const char* op : {"layers.0.relu#0", "layers.0.add#0", "layers.0.relu#1", "layers.8.add#0"}) {
    EXPECT_EQ(forward.count(op), 1u) << op;
  }
  std::set<std::string> layers;
  for (const LayerSummary& l : perf::trace_layers(*model, Shape{3, 32, 32})) layers.insert(l.path);
  EXPECT_EQ(forward, layers);
  // Every forward span lies inside the recorded step, and none overlaps the one before it.
  double step_start = 0, step_end = 0;
  std::vector<std::pair<double, double>> spans;
  for (const auto& e : events) {
    const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
    if (e["cat"] == "step") std::tie(step_start, step_end) = std::pair{ts, end};
    if (e["cat"] == "forward") spans.emplace_back(ts, end);
  }
  std::sort(spans.begin(), spans.end());
  ASSERT_EQ(spans.size(), layers.size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    EXPECT_GE(spans[i].first, step_start);
    EXPECT_LE(spans[i].second, step_end);
    if (i > 0) {
      EXPECT_GE(spans[i].first, spans[i - 1].second - 1e-3);
    }
  }
}

using dtrain::test_support::CommandResult;

CommandResult dtrain(const std::string& args) {
  return dtrain::test_support::run_command(std::string("DTRAIN_PROFILES=") + DTRAIN_PROFILES_DIR + " " + DTRAIN_BINARY +
                                           " " + args);
}

bool has_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
}

TEST(TraceCli, TrainWithProfileAndTraceBesidePredictTrace) {
  if (!has_fashion_mnist()) GTEST_SKIP() << "needs Debian's dataset-fashion-mnist";
  const auto dir = std::filesystem::temp_directory_path();
  const std::string log = (dir / "dtrain_trace_cli.jsonl").string(), measured = (dir / "dtrain_measured.json").string(),
                    predicted = (dir / "dtrain_predicted.json").string();
  const CommandResult r = dtrain(
      "train --model mlp --epochs 2 --limit 640 --eval-limit 200 --threads 1 --profile "
      "skylake-sp --trace " +
      measured + " --trace-steps 3 --log " + log);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("epoch 1/2 per step: predicted"), std::string::npos) << r.output;
  std::ifstream m(measured);
  const auto measured_events = complete_events(nlohmann::json::parse(m));
  EXPECT_EQ(names_of(measured_events, "step").size(), 3u);
  EXPECT_EQ(names_of(measured_events, "forward").count("f1"), 1u);
  // The metrics log holds the prediction and both times per epoch.
  std::ifstream lf(log);
  std::string line;
  std::getline(lf, line);
  const nlohmann::json config = nlohmann::json::parse(line);
  EXPECT_GT(config["predicted"]["step_s"].get<double>(), 0);
  std::getline(lf, line);
  const nlohmann::json epoch = nlohmann::json::parse(line);
  EXPECT_GT(epoch["predicted_step_s"].get<double>(), 0);
  EXPECT_GT(epoch["measured_step_s"].get<double>(), 0);
  // explain reads it back.
  const CommandResult e = dtrain("explain " + log);
  ASSERT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("one worker: nothing to scale"), std::string::npos) << e.output;
  // The same run predicted, in the same format.
  const CommandResult p = dtrain(
      "predict --model mlp --dataset fashion-mnist --workers 1 --batch-per-worker 64 "
      "--profile skylake-sp --trace " +
      predicted);
  ASSERT_EQ(p.status, 0) << p.output;
  std::ifstream pf(predicted);
  const auto predicted_events = complete_events(nlohmann::json::parse(pf));
  EXPECT_EQ(names_of(predicted_events, "forward"), names_of(measured_events, "forward"));
  for (const auto& f : {log, measured, predicted}) std::filesystem::remove(f);
}

TEST(TraceCli, BadInputIsNamed) {
  CommandResult r = dtrain("train --bucket-mb auto --log ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--bucket-mb auto chooses by the performance model: give --profile FILE"), std::string::npos)
      << r.output;
  r = dtrain("train --bucket-mb big --log ''");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--bucket-mb must be a size in MiB >= 0 or auto, got 'big'"), std::string::npos) << r.output;
  r = dtrain("predict --model mlp --dataset mnist --workers 1,2 --profile skylake-sp+eth-10g --trace /tmp/x.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("give one --workers value and one --allreduce"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace dtrain
