#include "perfmodel/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/core_round_trip.h"
#include "core/error.h"
#include "perfmodel/auto_choice.h"
#include "perfmodel/report.h"
#include "perfmodel/training_plan.h"
#include "perfmodel/workload.h"

namespace dtrain::perf {
namespace {

RunConfig config_of(const nlohmann::json& c) {
  RunConfig r;
  r.workers = c.value("world_size", 1);
  r.batch_per_worker = c.value("batch", std::int64_t{64});
  // What `auto` resolved to at start-up when the log records it (shm on one host).
  const std::string a = c.value("allreduce_chosen", c.value("allreduce", std::string("auto")));
  r.algorithm = comm::parse_algorithm(a);
  r.comm_dtype = parse_dtype(c.value("comm_dtype", std::string("f32")));
  r.bucket_bytes = static_cast<std::size_t>(c.value("bucket_mb", 1.0) * (1 << 20));
  r.double_buffering = c.value("double_buffering", false);
  r.accumulate = c.value("accumulate", 1);
  r.chunk_bytes = static_cast<std::size_t>(c.value("chunk_kb", 0.0) * 1024);  // absent: by layout
  r.disk_bytes_per_sample = 0;  // dtrain train holds the dataset in memory
  if (c.value("mode", std::string("allreduce")) == "ps") {
    r.exchange = Exchange::kParameterServer;
    r.servers = c.value("servers", 1);
    r.workers = std::max(1, r.workers - r.servers);
    r.sync = parse_sync(c.value("sync", std::string("bsp")));
    r.staleness = c.value("staleness", 0);
  }
  if (c.contains("slowdown")) {  // dtrain train --slow-*: the model prices the same workers
    const nlohmann::json& d = c["slowdown"];
    const std::string mode = d.value("mode", std::string("none"));
    if (mode == "persistent" || mode == "random") {
      r.slowdown.straggler = mode == "random" ? WorkerSpeeds::Straggler::kRandom : WorkerSpeeds::Straggler::kPersistent;
      r.slowdown.factor = d.value("factor", 1.0);
      r.slowdown.probability = d.value("probability", 0.0);
    }
  }
  return r;
}

std::string ms(double s) { return format_seconds(s); }

// The servers' side of a parameter-server run, from its "ps" record (null: the run did not end).
std::string server_report(const nlohmann::json& ps, const Explanation& e) {
  if (!ps.is_object()) return "\nparameter servers: the log has no \"ps\" record (the run did not finish)\n";
  std::string s =
      fmt::format("\nparameter servers: {:.2f} global steps/s while every worker ran", e.ps_steps_per_second);
  if (e.has_model) {
    const double predicted = 1 / e.predicted_step;
    s += fmt::format(" (model {:.2f}, {:+.1f}%)", predicted,
                     e.ps_steps_per_second > 0 ? 100 * (predicted - e.ps_steps_per_second) / e.ps_steps_per_second : 0);
  }
  s += fmt::format("; server 0 busy {:.0f}% of the time\n", 100 * e.ps_busy_fraction);
  s += fmt::format("staleness: clock gap max {}, tau mean {:.2f}\n", ps.value("gap_max", std::int64_t{-1}),
                   ps.value("tau_mean", 0.0));
  std::vector<std::string> waits;
  for (double w : e.ps_worker_waits) waits.push_back(ms(w));
  if (!waits.empty()) s += fmt::format("workers waited for the servers: {} in all\n", fmt::join(waits, ", "));
  return s;
}

// A parameter-server run's wait: the servers' load, the slowest worker under BSP, or the bytes.
std::string server_advice(const Explanation& e, const RunConfig& c) {
  if (e.ps_busy_fraction > 0.5) {
    return fmt::format("the servers are busy {:.0f}% of the time: more --servers share the load",
                       100 * e.ps_busy_fraction);
  }
  if (!e.ps_worker_waits.empty() && c.sync != Sync::kAsp) {
    const auto [least, most] = std::minmax_element(e.ps_worker_waits.begin(), e.ps_worker_waits.end());
    if (*most - *least > 0.25 * *most) {
      return fmt::format(
          "the workers wait unequally ({} to {} in all): under {} a clock waits for the slowest worker; --sync ssp "
          "--staleness S (or asp) lets the others run on",
          ms(*least), ms(*most), sync_name(c.sync));
    }
  }
  std::string s = "every step pushes the gradients and pulls the weights";
  if (c.comm_dtype == DType::kF32) s += "; --comm-dtype bf16 halves the pushes";
  return s + "; more --servers split the bytes between them";
}

// What shrinks each kind of loss.
std::string advice(const std::string& part, const Explanation& e, const RunConfig& c) {
  if (part == "exposed communication" && c.exchange == Exchange::kParameterServer) return server_advice(e, c);
  if (part == "exposed communication") {
    if (!e.has_model) return "the wait for the gradient buckets after backward";
    if (e.turns && e.straggler > 0.5 * e.predicted.comm) {
      return fmt::format(
          "mostly the ranks taking turns on shared CPUs ({} of the model's {}): more ranks than CPUs; run at most "
          "one rank per CPU",
          ms(e.straggler), ms(e.predicted.comm));
    }
    if (e.straggler > 0.5 * e.predicted.comm) {
      return fmt::format(
          "mostly the wait for the slowest worker ({} of the model's {}): ranks that differ in speed (a busier "
          "host, other jobs) or jitter from step to step; give every rank the same share of the machine",
          ms(e.straggler), ms(e.predicted.comm));
    }
    const bool latency = e.comm_latency > 0.5 * e.comm_allreduce;
    if (latency) {
      return fmt::format(
          "latency-bound: {} bucket(s) pay {} of alpha per step; larger --bucket-mb (or --bucket-mb "
          "auto with --profile) pays it fewer times, butterfly pays log2(p) instead of p-1 rounds",
          e.buckets, ms(e.comm_latency));
    }
    std::string s =
        fmt::format("bandwidth-bound: the collectives move the gradients in {} per step", ms(e.comm_allreduce));
    if (c.comm_dtype == DType::kF32) s += "; --comm-dtype f16 halves the bytes";
    if (!c.double_buffering) s += "; --double-buffering overlaps them with the next step";
    return s;
  }
  if (part == "compute slowed beside the other ranks") {
    return "the ranks of a host share its cores and memory, and the communication thread polls on them too: "
           "fewer ranks per host, or as many compute threads in all as cores";
  }
  if (part == "data") return "the loader does not keep up: raise --prefetch, or simpler augmentation";
  return "the training loop's own work between steps (loader hand-off, bookkeeping)";
}

}  // namespace

MeasuredRun read_metrics_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw InputError(
        fmt::format("cannot open the metrics log '{}'; give the file dtrain train wrote with --log", path));
  }
  MeasuredRun run;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw DataError(
          fmt::format("{}:{}: not a JSON record ({}); is this a dtrain train --log file?", path, n, e.what()));
    }
    const std::string type = j.value("type", "");
    if (type == "config") run.config = j;
    if (type == "epoch") run.epochs.push_back(j);
    if (type == "ps") run.ps = j;
  }
  if (run.config.is_null()) {
    throw DataError(fmt::format("{}: no \"config\" record; is this a dtrain train --log file?", path));
  }
  if (run.epochs.empty()) {
    throw DataError(fmt::format("{}: no \"epoch\" record yet; explain needs at least one finished epoch", path));
  }
  return run;
}

Explanation explain_run(const MeasuredRun& run, const std::string& profile_spec, const std::string& trace_path) {
  Explanation e;
  const nlohmann::json& cfg = run.config;
  const RunConfig c = config_of(cfg);
  // Measured: per step over the epochs used.
  const std::size_t first = run.epochs.size() > 1 ? 1 : 0;
  std::int64_t steps = 0, previous = first > 0 ? run.epochs[0].value("iteration", std::int64_t{0}) : 0;
  double seconds = 0;
  PhaseTimes total;
  for (std::size_t i = first; i < run.epochs.size(); ++i) {
    const nlohmann::json& r = run.epochs[i];
    const std::int64_t it = r.value("iteration", std::int64_t{0});
    steps += it - previous;
    previous = it;
    seconds += r.value("epoch_seconds", 0.0);
    total += r.value("time", nlohmann::json::object()).get<PhaseTimes>();
  }
  if (steps <= 0) throw DataError("the metrics log's epoch records count no steps (\"iteration\")");
  e.epochs_used = static_cast<int>(run.epochs.size() - first);
  const double n = static_cast<double>(steps);
  e.measured_step = seconds / n;
  e.measured = {total.data / n, total.forward / n, total.backward / n, total.comm / n, total.update / n};
  e.measured_other = std::max(0.0, e.measured_step - e.measured.total());
  e.run_core_round_trip = cfg.value("core_round_trip_ns", 0.0) * 1e-9;
  e.parameter_server = c.exchange == Exchange::kParameterServer;
  if (run.ps.is_object()) {
    e.ps_steps_per_second = run.ps.value("steps_per_second", 0.0);
    e.ps_worker_waits = run.ps.value("worker_wait_seconds", std::vector<double>{});
    if (run.ps.contains("servers") && !run.ps["servers"].empty()) {
      const nlohmann::json& s0 = run.ps["servers"][0];
      const double server_seconds = s0.value("seconds", 0.0);
      e.ps_busy_fraction = server_seconds > 0 ? s0.value("busy_seconds", 0.0) / server_seconds : 0.0;
    }
  }

  // The model: a profile given now, else the one the run was trained with (if still readable),
  // else the prediction the log holds.
  std::string spec = profile_spec;
  if (spec.empty() && cfg.contains("profile")) {
    const std::string logged = cfg["profile"].value("spec", "");
    if (!logged.empty() && (logged.find('/') == std::string::npos || std::filesystem::exists(logged))) spec = logged;
  }
  const std::string model = cfg.value("model", "");
  const std::string dataset = cfg.value("dataset", "");
  StepPrediction p;
  if (!spec.empty()) {
    // Priced in the run's own precision: a bf16 run's layers at the profile's bf16 rates.
    Profile profile = load_profile(spec);
    profile.device = at_precision(profile.device, profile.name, cfg.value("precision", std::string("f32")));
    const Workload w = describe_zoo_model(model, dataset);
    p = predict_step(w, profile, c);
    RunConfig one = c;
    one.workers = 1;
    one.double_buffering = false;
    one.exchange = Exchange::kAllreduce;  // one worker alone: no servers, nobody slowed
    one.slowdown = WorkerSpeeds{};
    e.one_worker_step = predict_step(w, profile, one).step;
    e.has_model = true;
    e.profile = profile.name;
    if (profile.node.core_round_trip) e.profile_core_round_trip = profile.node.core_round_trip->value;
  } else if (cfg.contains("predicted")) {
    p = prediction_from_json(cfg["predicted"]);
    e.has_model = true;
    e.profile = cfg.contains("profile") ? cfg["profile"].value("name", "logged") + " (as logged)" : "logged";
  }
  if (e.has_model) {
    e.predicted_step = p.step;
    e.predicted = p.phases;
    e.comm_busy = p.comm;
    e.comm_latency = p.comm_latency;
    e.comm_allreduce = p.comm_allreduce;
    e.straggler = p.straggler;
    e.turns = p.turns;
    e.buckets = static_cast<int>(p.buckets.size());
  }
  if (!trace_path.empty()) {
    if (!e.has_model) {
      throw InputError(fmt::format(
          "--trace {} compares the run's layers with the model's: give --profile (a profile of this machine from "
          "dtrain calibrate)",
          trace_path));
    }
    e.layers = compare_layers(read_trace(trace_path), p, trace_path);
  }

  // The report.
  std::string s = fmt::format("run: {} on {}, {} worker(s) x batch {}", model, dataset, c.workers, c.batch_per_worker);
  if (e.parameter_server) {
    s += fmt::format(", {} parameter server(s), sync {}{}, pushes in {}", c.servers, sync_name(c.sync),
                     c.sync == Sync::kSsp ? fmt::format(" (staleness {})", c.staleness) : "", dtype_name(c.comm_dtype));
  } else if (c.workers > 1) {
    s +=
        fmt::format(", {} allreduce in {}, {} buckets{}{}", comm::algorithm_name(c.algorithm), dtype_name(c.comm_dtype),
                    bucket_label(c.bucket_bytes), c.double_buffering ? ", double buffering" : "",
                    c.accumulate > 1 ? fmt::format(", {} micro-batches", c.accumulate) : "");
  }
  s +=
      fmt::format("; {} epoch(s) measured{}\n\n", e.epochs_used, first > 0 ? " (the first left out: it warms up)" : "");
  s += fmt::format("  {:<24} {:>10} {:>10}\n", "per step", "measured", e.has_model ? "model" : "");
  auto row = [&](const char* name, double m, double q, bool modelled = true) {
    s += fmt::format("  {:<24} {:>10} {:>10}\n", name, ms(m), e.has_model && modelled ? ms(q) : "");
  };
  row("data wait", e.measured.data, e.predicted.data);
  row("forward", e.measured.forward, e.predicted.forward);
  row("backward", e.measured.backward, e.predicted.backward);
  row(e.parameter_server ? "waiting for the servers" : "communication (exposed)", e.measured.comm, e.predicted.comm);
  if (e.has_model && e.straggler > 0) {
    s += fmt::format("  {:<24} {:>10} {:>10}\n", e.turns ? "  of which taking turns" : "  of which straggler wait", "",
                     ms(e.straggler));
  }
  row("update", e.measured.update, e.predicted.update);
  row("other", e.measured_other, 0, false);
  row("step", e.measured_step, e.predicted_step);
  if (e.has_model) {
    s += fmt::format("  model {:+.1f}% against the measurement (profile {})\n",
                     100 * (e.predicted_step - e.measured_step) / e.measured_step, e.profile);
  }
  if (e.layers) s += format_layer_comparison(*e.layers, trace_path);
  if (e.parameter_server) {
    s += server_report(run.ps, e);
  } else if (e.has_model && c.workers > 1) {
    s += fmt::format(
        "\ncommunication (model): {} bucket(s), {} per step on the communication thread, of which the collectives "
        "{} (latency {}: rounds x alpha; bandwidth and reduction {}); {} of it overlaps compute, {} is exposed\n",
        e.buckets, ms(e.comm_busy), ms(e.comm_allreduce), ms(e.comm_latency), ms(e.comm_allreduce - e.comm_latency),
        ms(std::max(0.0, e.comm_busy - (e.predicted.comm - e.straggler))), ms(e.predicted.comm - e.straggler));
    if (e.straggler > 0 && e.turns) {
      s += fmt::format("taking turns (model): {} per step, {} ranks sharing fewer CPUs\n", ms(e.straggler), c.workers);
    } else if (e.straggler > 0) {
      s += fmt::format("straggler wait (model): {} per step waiting for the slowest of the {} workers\n",
                       ms(e.straggler), c.workers);
    }
  }

  if (c.workers > 1 && e.run_core_round_trip > 0 && e.profile_core_round_trip > 0) {
    const bool changed = different_core_state(e.run_core_round_trip, e.profile_core_round_trip);
    s += fmt::format(
        "machine state: a cache line between two cores takes {:.0f} ns there and back in this run, {:.0f} ns when the "
        "profile was calibrated{}\n",
        e.run_core_round_trip * 1e9, e.profile_core_round_trip * 1e9,
        changed ? ": a different state (a VM's CPUs moved between cores that share a cache and cores that do not), "
                  "so same-host communication ran at another speed than the profile's; compare runs made in one "
                  "state (dtrain bench cores watches it)"
                : ": the same state");
  }

  // Scaling against one worker with the same per-worker batch.
  if (c.workers > 1) {
    std::vector<std::pair<double, std::string>> parts{
        {e.measured.comm, "exposed communication"}, {e.measured.data, "data"}, {e.measured_other, "other"}};
    if (e.one_worker_step > 0) {
      const double compute = e.measured.forward + e.measured.backward + e.measured.update;
      const double alone = e.one_worker_step;
      parts.emplace_back(std::max(0.0, compute - alone), "compute slowed beside the other ranks");
      const double efficiency = alone / e.measured_step;
      s += fmt::format(
          "\nscaling: one worker would take {} per step with the same batch (model); this run takes {}: "
          "efficiency {:.0f}% (speedup {:.2f} on {} workers)\n",
          ms(alone), ms(e.measured_step), 100 * efficiency, efficiency * c.workers, c.workers);
    } else {
      s += "\nscaling: give --profile (a profile of this machine from dtrain calibrate) to compare with one worker\n";
    }
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    s += "  lost per step:";
    for (std::size_t i = 0; i < parts.size(); ++i)
      s += fmt::format("{} {} {}", i ? "," : "", parts[i].second, ms(parts[i].first));
    s += "\n";
    const auto& top = parts.front();
    if (top.first < 0.05 * e.measured_step) {
      e.limit = "nothing much: the step is compute";
      s += "limits scaling: little; the step is compute, spent as one worker would spend it\n";
    } else {
      e.limit = top.second;
      s += fmt::format("limits scaling: {} ({:.0f}% of the step): {}\n", top.second, 100 * top.first / e.measured_step,
                       advice(top.second, e, c));
    }
  } else {
    e.limit = "one worker: nothing to scale";
    s += "\none worker: nothing to scale; the step is its compute\n";
  }
  e.text = s;
  return e;
}

nlohmann::json explanation_json(const Explanation& e) {
  auto phases = [](const PhaseTimes& p) {
    return nlohmann::json{
        {"data", p.data}, {"forward", p.forward}, {"backward", p.backward}, {"comm", p.comm}, {"update", p.update}};
  };
  nlohmann::json j = {{"epochs_used", e.epochs_used},
                      {"measured_step_s", e.measured_step},
                      {"measured_s", phases(e.measured)},
                      {"measured_other_s", e.measured_other},
                      {"limit", e.limit}};
  if (e.has_model) {
    j["profile"] = e.profile;
    j["predicted_step_s"] = e.predicted_step;
    j["predicted_s"] = phases(e.predicted);
    j["one_worker_step_s"] = e.one_worker_step;
    j["comm_busy_s"] = e.comm_busy;
    j["comm_latency_s"] = e.comm_latency;
    j["comm_allreduce_s"] = e.comm_allreduce;
    j["straggler_s"] = e.straggler;
    j["buckets"] = e.buckets;
  }
  if (e.parameter_server) {
    j["ps_steps_per_second"] = e.ps_steps_per_second;
    j["ps_busy_fraction"] = e.ps_busy_fraction;
    j["ps_worker_wait_s"] = e.ps_worker_waits;
  }
  if (e.layers) {
    nlohmann::json kinds = nlohmann::json::array();
    for (const LayerTimes& k : e.layers->kinds) {
      kinds.push_back({{"kind", k.kind}, {"phase", k.phase}, {"measured_s", k.measured}, {"predicted_s", k.predicted}});
    }
    j["layers"] = {{"rank_steps", e.layers->rank_steps},
                   {"by_kind", kinds},
                   {"measured_s", e.layers->measured_total()},
                   {"predicted_s", e.layers->predicted_total()},
                   {"unmatched_measured_s", e.layers->unmatched_measured},
                   {"missing", e.layers->missing}};
  }
  return j;
}

}  // namespace dtrain::perf
