#include "schedule/cluster.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dtrain::schedule {
namespace {

void check_cluster_positive(const std::string& what, double v) {
  if (!(v > 0)) throw InputError(fmt::format("{} must be positive, got {}", what, v));
}

}  // namespace

PreemptBy parse_preempt_by(const std::string& name) {
  if (name == "requeue") return PreemptBy::kRequeue;
  if (name == "suspend") return PreemptBy::kSuspend;
  throw InputError(fmt::format("unknown preemption '{}'; valid: requeue, suspend", name));
}

Cluster read_cluster_file(const std::string& path, Cluster base) {
  Cluster& c = base;
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("cannot read the cluster file '{}'; give an existing JSON file", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("cluster file '{}' is not JSON: {}", path, e.what()));
  }
  if (!j.is_object()) throw InputError(fmt::format("cluster file '{}' must hold one JSON object", path));
  for (const auto& item : j.items()) {
    // Named references, not structured bindings: lambdas may not capture bindings before C++20 in clang 14.
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    const auto number = [&]() {
      if (!value.is_number()) throw InputError(fmt::format("cluster file '{}': '{}' must be a number", path, key));
      const double v = value.get<double>();
      if (v < 0) throw InputError(fmt::format("cluster file '{}': '{}' must be zero or more, got {}", path, key, v));
      return v;
    };
    const auto count = [&]() {
      if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > 1'000'000) {
        throw InputError(fmt::format("cluster file '{}': '{}' must be a whole number >= 1", path, key));
      }
      return value.get<int>();
    };
    if (key == "nodes") {
      c.nodes = count();
    } else if (key == "ranks_per_node") {
      c.ranks_per_node = count();
    } else if (key == "profile") {
      if (!value.is_string()) throw InputError(fmt::format("cluster file '{}': 'profile' must be a string", path));
      c.profile = value.get<std::string>();
    } else if (key == "checkpoint_write_bytes_per_s") {
      c.checkpoint_write_bytes_per_s = number();
    } else if (key == "checkpoint_read_bytes_per_s") {
      c.checkpoint_read_bytes_per_s = number();
    } else if (key == "requeue_seconds") {
      c.requeue_seconds = number();
    } else if (key == "restart_seconds") {
      c.restart_seconds = number();
    } else if (key == "optimizer_slots") {
      c.optimizer_slots = static_cast<int>(number());
    } else if (key == "preempt") {
      if (!value.is_string()) throw InputError(fmt::format("cluster file '{}': 'preempt' must be a string", path));
      try {
        c.preempt_by = parse_preempt_by(value.get<std::string>());
      } catch (const InputError& e) {
        throw InputError(fmt::format("cluster file '{}': {}", path, e.what()));
      }
    } else if (key == "suspend_seconds") {
      c.suspend_seconds = number();
    } else {
      throw InputError(fmt::format(
          "cluster file '{}': unknown field '{}'; valid: nodes, ranks_per_node, profile, checkpoint_write_bytes_per_s, "
          "checkpoint_read_bytes_per_s, requeue_seconds, restart_seconds, optimizer_slots, preempt, suspend_seconds",
          path, key));
    }
  }
  return base;
}

perf::Profile resolve_cluster(Cluster& c) {
  if (c.profile.empty()) {
    throw InputError(
        "dtrain schedule needs --profile (a profile with the cluster's devices per node, e.g. "
        "8xv100-nvlink+ib-edr; see dtrain predict --list-profiles)");
  }
  if (c.nodes < 1) throw InputError(fmt::format("--nodes must be at least 1, got {}", c.nodes));
  if (c.ranks_per_node < 0)
    throw InputError(fmt::format("--ranks-per-node must be at least 1, got {}", c.ranks_per_node));
  perf::Profile p = perf::load_profile(c.profile);
  const int per_node = p.node.accelerators;
  if (c.ranks_per_node == 0) c.ranks_per_node = per_node;
  if (c.ranks_per_node != per_node) {
    throw InputError(fmt::format(
        "--ranks-per-node {} but profile '{}' has {} devices per node; the model places a job's ranks on nodes of the "
        "profile's size: give --ranks-per-node {} or a profile with {}x its device",
        c.ranks_per_node, c.profile, per_node, per_node, c.ranks_per_node));
  }
  if (c.checkpoint_write_bytes_per_s == 0) c.checkpoint_write_bytes_per_s = p.node.disk_read.value;
  if (c.checkpoint_read_bytes_per_s == 0) c.checkpoint_read_bytes_per_s = p.node.disk_read.value;
  check_cluster_positive("the checkpoint write rate", c.checkpoint_write_bytes_per_s);
  check_cluster_positive("the checkpoint read rate", c.checkpoint_read_bytes_per_s);
  if (c.optimizer_slots < 0) throw InputError(fmt::format("optimizer_slots must be >= 0, got {}", c.optimizer_slots));
  return p;
}

}  // namespace dtrain::schedule
