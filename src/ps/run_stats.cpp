#include "ps/run_stats.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace dtrain::ps {
namespace {

nlohmann::json histogram_json(const Histogram& h) { return h.counts(); }

Histogram histogram_from(const nlohmann::json& j, const char* field) {
  if (!j.contains(field) || !j[field].is_array()) {
    throw InputError(fmt::format("parameter-server stats: '{}' is missing or not a list", field));
  }
  Histogram h;
  const auto counts = j[field].get<std::vector<std::int64_t>>();
  for (std::size_t v = 0; v < counts.size(); ++v) {
    if (counts[v] < 0) throw InputError(fmt::format("parameter-server stats: negative count in '{}'", field));
    h.add_many(static_cast<std::int64_t>(v), counts[v]);
  }
  return h;
}

// "0:12 1:30 2:4": the first 12 non-empty bins, then how many more (the log has them all).
std::string bins(const Histogram& h) {
  constexpr int kShown = 12;
  std::string out;
  int shown = 0, more = 0;
  for (std::size_t v = 0; v < h.counts().size(); ++v) {
    if (h.counts()[v] == 0) continue;
    if (shown == kShown) {
      ++more;
      continue;
    }
    out += fmt::format("{}{}:{}", out.empty() ? "" : " ", v, h.counts()[v]);
    ++shown;
  }
  if (more > 0) out += fmt::format(" and {} more bins up to {}", more, h.max());
  return out.empty() ? "none" : out;
}

}  // namespace

double ServerStats::gradients_per_second() const {
  return all_running_seconds > 0 ? static_cast<double>(all_running_gradients) / all_running_seconds : 0.0;
}

nlohmann::json to_json(const ServerStats& s) {
  return {{"server", s.server},
          {"updates", s.updates},
          {"gradients", s.gradients},
          {"seconds", s.seconds},
          {"busy_seconds", s.busy_seconds},
          {"all_running_seconds", s.all_running_seconds},
          {"all_running_gradients", s.all_running_gradients},
          {"gradients_per_second", s.gradients_per_second()},
          {"gap_histogram", histogram_json(s.gaps)},
          {"gap_max", s.gaps.max()},
          {"gap_mean", s.gaps.mean()},
          {"tau_histogram", histogram_json(s.taus)},
          {"tau_mean", s.taus.mean()},
          {"tau_mean_per_worker", s.tau_mean_per_worker},
          {"queue_depth_histogram", histogram_json(s.queue_depth)},
          {"queue_depth_mean", s.queue_depth.mean()},
          {"worker_wait_seconds", s.worker_wait_seconds},
          {"worker_pushes", s.worker_pushes}};
}

ServerStats server_stats_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("parameter-server stats: expected a JSON object");
  try {
    ServerStats s;
    s.server = j.at("server").get<int>();
    s.updates = j.at("updates").get<std::int64_t>();
    s.gradients = j.at("gradients").get<std::int64_t>();
    s.seconds = j.at("seconds").get<double>();
    s.busy_seconds = j.at("busy_seconds").get<double>();
    s.all_running_seconds = j.at("all_running_seconds").get<double>();
    s.all_running_gradients = j.at("all_running_gradients").get<std::int64_t>();
    s.gaps = histogram_from(j, "gap_histogram");
    s.taus = histogram_from(j, "tau_histogram");
    s.queue_depth = histogram_from(j, "queue_depth_histogram");
    s.tau_mean_per_worker = j.at("tau_mean_per_worker").get<std::vector<double>>();
    s.worker_wait_seconds = j.at("worker_wait_seconds").get<std::vector<double>>();
    s.worker_pushes = j.at("worker_pushes").get<std::vector<std::int64_t>>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("parameter-server stats: {}", e.what()));
  }
}

nlohmann::json ps_record(const std::vector<ServerStats>& servers, int workers) {
  DT_CHECK(!servers.empty() && workers >= 1, "a parameter-server record of {} servers, {} workers", servers.size(),
           workers);
  nlohmann::json per_server = nlohmann::json::array();
  for (const ServerStats& s : servers) per_server.push_back(to_json(s));
  const ServerStats& first = servers.front();
  return {{"type", "ps"},
          {"workers", workers},
          {"steps_per_second", first.gradients_per_second() / workers},
          {"gap_max", first.gaps.max()},
          {"tau_mean", first.taus.mean()},
          {"worker_wait_seconds", first.worker_wait_seconds},
          {"servers", per_server}};
}

std::string describe_ps_run(const std::vector<ServerStats>& servers, int workers) {
  DT_CHECK(!servers.empty(), "no parameter-server stats");
  const ServerStats& s = servers.front();
  std::int64_t gap_max = -1;
  for (const ServerStats& k : servers) gap_max = std::max(gap_max, k.gaps.max());
  std::string out = fmt::format(
      "parameter servers: {} updates of {} gradients, {:.2f} global steps/s while all {} workers ran; server 0 busy "
      "{:.0f}% of {:.1f} s, {:.2f} messages per busy poll\n",
      s.updates, s.gradients, s.gradients_per_second() / workers, workers,
      s.seconds > 0 ? 100 * s.busy_seconds / s.seconds : 0.0, s.seconds, s.queue_depth.mean());
  std::vector<std::string> tau_w, wait_w;
  for (double t : s.tau_mean_per_worker) tau_w.push_back(fmt::format("{:.2f}", t));
  for (double t : s.worker_wait_seconds) wait_w.push_back(fmt::format("{:.1f}", t));
  out += fmt::format(
      "staleness: clock gap max {} (mean {:.2f}; histogram {}), tau mean {:.2f} (per worker {}; "
      "histogram {})\n",
      gap_max, s.gaps.mean(), bins(s.gaps), s.taus.mean(), fmt::join(tau_w, ", "), bins(s.taus));
  out += fmt::format("workers waited {} s for the servers\n", fmt::join(wait_w, ", "));
  return out;
}

}  // namespace dtrain::ps
