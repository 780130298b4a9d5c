// dtrain explain --trace: a measured trace's layers beside the model's, per layer kind; clear
// errors for files that are not traces and for a run with no model to compare with.
#include "perfmodel/layer_comparison.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "perfmodel/explain.h"
#include "perfmodel/predicted_trace.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

// A Chrome trace span as dtrain train writes it: microseconds; forward spans name their kind.
nlohmann::json span(const std::string& name, const std::string& phase, int rank, double ms,
                    const std::string& kind = "") {
  nlohmann::json e = {{"name", name}, {"cat", phase}, {"ph", "X"},       {"pid", rank},
                      {"tid", 1},     {"ts", 0.0},    {"dur", ms * 1e3}, {"args", nlohmann::json::object()}};
  if (!kind.empty()) e["args"]["kind"] = kind;
  return e;
}

// Two ranks, two recorded steps: conv c (forward 2 and 4 ms, backward 6 ms), relu r (1 ms each
// way), the loss (0.5 ms forward) that the model has no layer for.
nlohmann::json measured_trace() {
  nlohmann::json events = nlohmann::json::array();
  for (int rank = 0; rank < 2; ++rank) {
    for (int step = 0; step < 2; ++step) {
      events.push_back(span("c", "forward", rank, step == 0 ? 2.0 : 4.0, "conv2d"));
      events.push_back(span("r", "forward", rank, 1.0, "relu"));
      events.push_back(span("softmax_cross_entropy", "forward", rank, 0.5, "softmax_cross_entropy"));
      events.push_back(span("r", "backward", rank, 1.0));
      events.push_back(span("c", "backward", rank, 6.0));
      events.push_back(span("bucket 0", "allreduce", rank, 9.0));
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

// The model's step: conv 3.3 ms forward, 6.6 backward; relu 1 ms each way; a layer "fc" the run
// never recorded; the update and an allreduce, which are not layers.
StepPrediction model_step() {
  StepPrediction p;
  p.timeline = {{"c", "forward", "compute", 0.0, 3.3e-3},     {"r", "forward", "compute", 3.3e-3, 1e-3},
                {"fc", "forward", "compute", 4.3e-3, 1e-3},   {"r", "backward", "compute", 5.3e-3, 1e-3},
                {"c", "backward", "compute", 6.3e-3, 6.6e-3}, {"bucket 0", "allreduce", "comm", 7e-3, 5e-3},
                {"update", "update", "compute", 13e-3, 1e-3}};
  p.step = 14e-3;
  return p;
}

TEST(LayerComparison, SumsEachKindsMeasuredMeanBesideTheModel) {
  const LayerComparison c = compare_layers(measured_trace(), model_step(), "run.json");
  EXPECT_EQ(c.rank_steps, 4);
  ASSERT_EQ(c.layers.size(), 4u);  // c and r, each way; fc is missing
  ASSERT_EQ(c.kinds.size(), 4u);
  // Largest measured first: conv backward 6 ms (model 6.6), conv forward the mean of 2 and 4 ms.
  EXPECT_EQ(c.kinds[0].kind, "conv2d");
  EXPECT_EQ(c.kinds[0].phase, "backward");  // its kind from the forward span of the same layer
  EXPECT_NEAR(c.kinds[0].measured, 6e-3, 1e-12);
  EXPECT_NEAR(c.kinds[0].predicted, 6.6e-3, 1e-12);
  EXPECT_EQ(c.kinds[1].phase, "forward");
  EXPECT_NEAR(c.kinds[1].measured, 3e-3, 1e-12);
  EXPECT_NEAR(c.kinds[1].predicted, 3.3e-3, 1e-12);
  EXPECT_EQ(c.kinds[2].kind, "relu");
  EXPECT_NEAR(c.measured_total(), 11e-3, 1e-12);
  EXPECT_NEAR(c.predicted_total(), 11.9e-3, 1e-12);
  EXPECT_NEAR(c.unmatched_measured, 0.5e-3, 1e-12);
  ASSERT_EQ(c.missing, std::vector<std::string>{"fc forward"});

  const std::string text = format_layer_comparison(c, "run.json");
  EXPECT_NE(text.find("layers (run.json, 4 rank-steps recorded)"), std::string::npos) << text;
  EXPECT_NE(text.find("conv2d             backward      6.0 ms     6.6 ms   +10.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("all layers matched              11.0 ms    11.9 ms    +8.2%"), std::string::npos) << text;
  EXPECT_NE(text.find("the loss): 500 us per step"), std::string::npos) << text;
  EXPECT_NE(text.find("never recorded: 1 (fc forward)"), std::string::npos) << text;
  // The conv's backward differs most (0.6 ms), then its forward (0.3 ms).
  EXPECT_NE(text.find("largest differences: c backward (conv2d) 6.6 ms against 6.0 ms; c forward (conv2d)"),
            std::string::npos)
      << text;
}

TEST(LayerComparison, ReadsThePredictedTraceOfTheSameStepAsAPerfectRun) {
  // dtrain predict --trace writes the model's own step as a trace: compared with the model, no
  // layer differs.
  const StepPrediction p = model_step();
  const LayerComparison c = compare_layers(predicted_trace(p, 2, 3), p, "predicted.json");
  EXPECT_EQ(c.rank_steps, 6);
  EXPECT_TRUE(c.missing.empty());
  for (const LayerTimes& l : c.layers) EXPECT_NEAR(l.measured, l.predicted, 1e-9) << l.name << " " << l.phase;
}

TEST(LayerComparison, NotATraceOrNoModelIsNamed) {
  EXPECT_THROW(compare_layers(nlohmann::json::object(), model_step(), "x.json"), DataError);
  EXPECT_THROW(compare_layers({{"traceEvents", {span("bucket 0", "allreduce", 0, 1)}}}, model_step(), "x.json"),
               DataError);
  EXPECT_THROW(compare_layers(measured_trace(), StepPrediction{}, "x.json"), InputError);
  // A span whose duration or kind is of the wrong type names the file and the event.
  nlohmann::json bad = measured_trace();
  bad["traceEvents"][0]["dur"] = "2 ms";
  try {
    compare_layers(bad, model_step(), "bad.json");
    ADD_FAILURE() << "a span with a text duration was read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: a trace event of the wrong form"), std::string::npos) << e.what();
  }
  bad = measured_trace();
  bad["traceEvents"][0]["args"]["kind"] = 3;
  EXPECT_THROW(compare_layers(bad, model_step(), "bad.json"), DataError);
  EXPECT_THROW(read_trace("/nonexistent/trace.json"), InputError);
  const auto junk = std::filesystem::temp_directory_path() / "dtrain_layer_comparison_junk.json";
  {
    std::ofstream f(junk);
    f << "{\"traceEvents\": [";
  }
  EXPECT_THROW(read_trace(junk.string()), DataError);
  std::filesystem::remove(junk);
}

TEST(LayerComparison, ExplainTakesTheTraceOnlyWithAModel) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto trace = dir / "dtrain_layer_comparison_trace.json";
  const auto log = dir / "dtrain_layer_comparison.jsonl";
  const auto profile = dir / "dtrain_layer_comparison_profile.json";
  {
    std::ofstream f(trace);
    f << measured_trace().dump();
  }
  {
    std::ofstream f(log);
    f << nlohmann::json{{"type", "config"},
                        {"model", "lenet"},
                        {"dataset", "fashion-mnist"},
                        {"batch", 64},
                        {"world_size", 1}}
             .dump()
      << '\n'
      << nlohmann::json{{"type", "epoch"},
                        {"epoch", 1},
                        {"iteration", 10},
                        {"epoch_seconds", 0.2},
                        {"time",
                         {{"data", 0.0}, {"forward", 0.05}, {"backward", 0.1}, {"comm", 0.0}, {"update", 0.01}}}}
             .dump()
      << '\n';
  }
  {
    std::ofstream f(profile);
    f << profile_to_json(testing::test_profile()).dump();
  }
  try {
    explain_run(read_metrics_log(log.string()), "", trace.string());
    ADD_FAILURE() << "a run with no model took --trace";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("give --profile"), std::string::npos) << e.what();
  }
  // LeNet's layers are not this trace's c and r: every model layer is missing, none matched.
  const Explanation e = explain_run(read_metrics_log(log.string()), profile.string(), trace.string());
  ASSERT_TRUE(e.layers.has_value());
  EXPECT_TRUE(e.layers->layers.empty());
  EXPECT_FALSE(e.layers->missing.empty());
  EXPECT_NE(e.text.find("model layers the trace never recorded"), std::string::npos) << e.text;
  for (const auto& f : {trace, log, profile}) std::filesystem::remove(f);
}

}  // namespace
}  // namespace dtrain::perf
