#include "perfmodel/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace dtrain::perf {
namespace {

std::string pad(const std::string& s, std::size_t width, bool left) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return left ? s + fill : fill + s;
}

}  // namespace

std::string format_seconds(double s) {
  if (s < 1e-3) return fmt::format("{:.0f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.1f} s", s);
  if (s < 2 * 3600) return fmt::format("{:.1f} min", s / 60);
  if (s < 100 * 3600) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} d", s / 86400);
}

std::string format_table(const std::vector<RunPrediction>& runs) {
  if (runs.empty()) return "";
  const int epochs = runs.front().epochs;
  const std::vector<std::string> head = {"workers",   "exchange",       "compute",
                                         "data",      "comm (exposed)", "straggler wait",
                                         "step",      "epoch",          fmt::format("{} epochs", epochs),
                                         "speedup",   "efficiency",     "device-h",
                                         "bottleneck"};
  std::vector<std::vector<std::string>> rows;
  for (const RunPrediction& r : runs) {
    const StepPrediction& s = r.step;
    rows.push_back({std::to_string(r.config.workers), r.config.workers == 1 ? "-" : exchange_label(r.config),
                    format_seconds(s.compute), format_seconds(s.data),
                    fmt::format("{} ({})", format_seconds(s.comm), format_seconds(s.exposed_comm())),
                    s.straggler > 0 ? format_seconds(s.straggler) : "-", format_seconds(s.step),
                    format_seconds(r.epoch_seconds), format_seconds(r.total_seconds), fmt::format("{:.1f}", r.speedup),
                    fmt::format("{:.0f}%", 100 * r.efficiency), fmt::format("{:.0f}", r.device_hours), s.bottleneck});
  }
  std::vector<std::size_t> width(head.size());
  for (std::size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool left = c == 1 || c + 1 == cells.size();
      l += (c ? "  " : "") + pad(cells[c], width[c], left);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(head);
  for (const auto& row : rows) line(row);

  std::set<std::string> exchanges;
  for (const RunPrediction& r : runs) exchanges.insert(exchange_label(r.config));
  if (exchanges.size() > 1) {
    out += "best:";
    const char* sep = " ";
    for (std::size_t i : best_per_worker_count(runs)) {
      if (runs[i].config.workers == 1) continue;
      out += fmt::format("{}{} workers: {} ({} per epoch)", sep, runs[i].config.workers, exchange_label(runs[i].config),
                         format_seconds(runs[i].epoch_seconds));
      sep = "; ";
    }
    out += "\n";
  }
  return out;
}

nlohmann::json run_to_json(const RunPrediction& r) {
  const StepPrediction& s = r.step;
  return {{"workers", r.config.workers},
          {"exchange", exchange_label(r.config)},
          {"batch_per_worker", r.config.batch_per_worker},
          {"step_s", s.step},
          {"compute_s", s.compute},
          {"data_s", s.data},
          {"comm_s", s.comm},
          {"comm_allreduce_s", s.comm_allreduce},
          {"comm_latency_s", s.comm_latency},
          {"straggler_s", s.straggler},
          {"sync_batch_norm_s", s.sync_batch_norm},
          {"population_s", r.population_seconds},
          {"phases_s", s.phases},
          {"buckets", s.buckets.size()},
          {"steps_per_epoch", r.steps_per_epoch},
          {"epoch_s", r.epoch_seconds},
          {"epochs", r.epochs},
          {"total_s", r.total_seconds},
          {"speedup", r.speedup},
          {"efficiency", r.efficiency},
          {"device_hours", r.device_hours},
          {"bottleneck", s.bottleneck}};
}

nlohmann::json runs_to_json(const std::vector<RunPrediction>& runs) {
  nlohmann::json j = {{"runs", nlohmann::json::array()}, {"best", nlohmann::json::array()}};
  for (const RunPrediction& r : runs) j["runs"].push_back(run_to_json(r));
  for (std::size_t i : best_per_worker_count(runs)) {
    j["best"].push_back({{"workers", runs[i].config.workers}, {"exchange", exchange_label(runs[i].config)}});
  }
  return j;
}

std::string describe_profile(const Profile& p) {
  std::string s =
      fmt::format("{}: {} x{} per node ({})", p.name, p.device.name, p.node.accelerators, p.node.intra_link.name);
  s += p.network ? fmt::format(", nodes joined by {}", p.network->name) : ", one node";
  return s;
}

}  // namespace dtrain::perf
