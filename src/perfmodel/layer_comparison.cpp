#include "perfmodel/layer_comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <utility>

#include "core/error.h"
#include "perfmodel/report.h"

namespace dtrain::perf {
namespace {

struct Spans {
  double seconds = 0;
  int count = 0;
  double mean() const { return count > 0 ? seconds / count : 0; }
};

std::string percent(double predicted, double measured) {
  return measured > 0 ? fmt::format("{:+.1f}%", 100 * (predicted - measured) / measured) : "";
}

}  // namespace

double LayerComparison::measured_total() const {
  double s = 0;
  for (const LayerTimes& l : layers) s += l.measured;
  return s;
}

double LayerComparison::predicted_total() const {
  double s = 0;
  for (const LayerTimes& l : layers) s += l.predicted;
  return s;
}

nlohmann::json read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(fmt::format("cannot open the trace '{}'; give the file dtrain train wrote with --trace", path));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw DataError(fmt::format("{}: not JSON ({}); is this a dtrain train --trace file?", path, e.what()));
  }
}

LayerComparison compare_layers(const nlohmann::json& trace, const StepPrediction& prediction,
                               const std::string& trace_name) {
  // Measured: every forward and backward span, by (name, phase); Chrome traces hold microseconds.
  std::map<std::pair<std::string, std::string>, Spans> measured;
  std::map<std::string, std::string> kind_of;
  const nlohmann::json* events = trace.is_object() && trace.contains("traceEvents") ? &trace["traceEvents"] : nullptr;
  if (events != nullptr && events->is_array()) {
    for (const nlohmann::json& e : *events) {
      try {
        if (!e.is_object() || e.value("ph", "") != "X") continue;
        const std::string phase = e.value("cat", "");
        if (phase != "forward" && phase != "backward") continue;
        const std::string name = e.value("name", "");
        const double seconds = e.value("dur", 0.0) * 1e-6;
        Spans& s = measured[{name, phase}];
        s.seconds += seconds;
        ++s.count;
        const nlohmann::json& args = e.value("args", nlohmann::json::object());
        if (phase == "forward" && args.is_object() && args.contains("kind"))
          kind_of[name] = args["kind"].get<std::string>();
      } catch (const nlohmann::json::exception& x) {
        throw DataError(
            fmt::format("{}: a trace event of the wrong form ({}): {}; give the Chrome trace dtrain train "
                        "wrote with --trace",
                        trace_name, x.what(), e.dump().substr(0, 200)));
      }
    }
  }
  if (measured.empty()) {
    throw DataError(fmt::format(
        "{}: no forward or backward spans; give the Chrome trace dtrain train wrote with --trace", trace_name));
  }
  // The model: the compute lane's layers of one step.
  std::map<std::pair<std::string, std::string>, double> predicted;
  std::vector<std::pair<std::string, std::string>> order;
  for (const TimelineEvent& e : prediction.timeline) {
    if (e.lane != "compute" || (e.category != "forward" && e.category != "backward")) continue;
    const auto key = std::make_pair(e.name, e.category);
    if (!predicted.contains(key)) order.push_back(key);
    predicted[key] += e.duration;
  }
  if (order.empty()) {
    throw InputError("the model's prediction has no layers to compare; give --profile (a profile of this machine)");
  }

  LayerComparison c;
  for (const auto& [key, spans] : measured) c.rank_steps = std::max(c.rank_steps, spans.count);
  std::map<std::pair<std::string, std::string>, LayerTimes> per_kind;
  for (const auto& key : order) {
    const auto it = measured.find(key);
    if (it == measured.end()) {
      c.missing.push_back(fmt::format("{} {}", key.first, key.second));
      continue;
    }
    const auto kind = kind_of.find(key.first);
    LayerTimes l{key.first, kind != kind_of.end() ? kind->second : key.first, key.second, it->second.mean(),
                 predicted[key]};
    LayerTimes& k = per_kind[{l.kind, l.phase}];
    k.kind = l.kind;
    k.phase = l.phase;
    k.measured += l.measured;
    k.predicted += l.predicted;
    c.layers.push_back(std::move(l));
  }
  for (const auto& [key, spans] : measured) {
    if (!predicted.contains(key)) c.unmatched_measured += spans.mean();
  }
  for (auto& [key, k] : per_kind) c.kinds.push_back(std::move(k));
  std::sort(c.kinds.begin(), c.kinds.end(), [](const LayerTimes& a, const LayerTimes& b) {
    return a.measured != b.measured ? a.measured > b.measured : a.predicted > b.predicted;
  });
  return c;
}

std::string format_layer_comparison(const LayerComparison& c, const std::string& trace_name) {
  std::string s = fmt::format("\nlayers ({}, {} rank-steps recorded): forward and backward per step, by layer kind\n",
                              trace_name, c.rank_steps);
  s += fmt::format("  {:<18} {:<9} {:>10} {:>10} {:>8}\n", "kind", "phase", "measured", "model", "error");
  for (const LayerTimes& k : c.kinds) {
    s += fmt::format("  {:<18} {:<9} {:>10} {:>10} {:>8}\n", k.kind, k.phase, format_seconds(k.measured),
                     format_seconds(k.predicted), percent(k.predicted, k.measured));
  }
  s += fmt::format("  {:<28} {:>10} {:>10} {:>8}\n", "all layers matched", format_seconds(c.measured_total()),
                   format_seconds(c.predicted_total()), percent(c.predicted_total(), c.measured_total()));
  if (c.unmatched_measured > 0) {
    s += fmt::format("  measured spans the model has no layer for (the loss): {} per step\n",
                     format_seconds(c.unmatched_measured));
  }
  if (!c.missing.empty()) {
    s += fmt::format("  model layers the trace never recorded: {} ({}{})\n", c.missing.size(), c.missing.front(),
                     c.missing.size() > 1 ? ", ..." : "");
  }
  std::vector<LayerTimes> worst = c.layers;
  std::sort(worst.begin(), worst.end(), [](const LayerTimes& a, const LayerTimes& b) {
    return std::abs(a.predicted - a.measured) > std::abs(b.predicted - b.measured);
  });
  worst.resize(std::min<std::size_t>(3, worst.size()));
  if (worst.empty()) return s + "  no layer of the model is in the trace: is it a trace of this run?\n";
  s += "  largest differences:";
  for (std::size_t i = 0; i < worst.size(); ++i) {
    const LayerTimes& l = worst[i];
    s += fmt::format("{} {} {} ({}) {} against {}", i ? ";" : "", l.name, l.phase, l.kind, format_seconds(l.predicted),
                     format_seconds(l.measured));
  }
  s += "\n";
  return s;
}

}  // namespace dtrain::perf
