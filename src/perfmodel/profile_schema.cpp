// Reading and writing the profile schema (docs/perfmodel.md, "Profile schema"). Strict: every
// object's fields are checked against the schema, so a typo ("bandwith") is an error naming the
// valid fields rather than a silently missing constant.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "perfmodel/profile.h"

namespace dtrain::perf {
namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(fmt::format("profile {}: {} (the schema: docs/perfmodel.md, \"Profile schema\")", origin_, what));
  }

  // `j` must be an object with every required field and no field outside required + optional.
  void fields(const json& j, const std::string& where, const std::vector<std::string>& required,
              const std::vector<std::string>& optional = {}) const {
    if (!j.is_object()) fail(fmt::format("'{}' must be an object, got {}", where, j.dump()));
    std::vector<std::string> valid = required;
    valid.insert(valid.end(), optional.begin(), optional.end());
    const std::set<std::string> known(valid.begin(), valid.end());
    for (const auto& [key, value] : j.items()) {
      if (known.count(key) == 0) {
        fail(fmt::format("unknown field '{}{}'; valid fields{}: {}", where.empty() ? "" : where + ".", key,
                         where.empty() ? "" : " of '" + where + "'", fmt::join(valid, ", ")));
      }
    }
    std::vector<std::string> missing;
    for (const std::string& r : required) {
      if (!j.contains(r)) missing.push_back(r);
    }
    if (!missing.empty()) {
      fail(fmt::format("'{}' is missing {}; required: {}", where.empty() ? "(top level)" : where,
                       fmt::join(missing, ", "), fmt::join(required, ", ")));
    }
  }

  std::string text(const json& j, const std::string& where) const {
    if (!j.is_string()) fail(fmt::format("'{}' must be a string, got {}", where, j.dump()));
    return j.get<std::string>();
  }

  // An integer in [least, most]; the error names the lower bound (the upper one only guards the cast).
  int integer(const json& j, const std::string& where, std::int64_t least, std::int64_t most) const {
    if (!j.is_number_integer() || j.get<std::int64_t>() < least || j.get<std::int64_t>() > most) {
      fail(fmt::format("'{}' is {}; it must be an integer >= {}", where, j.dump(), least));
    }
    return static_cast<int>(j.get<std::int64_t>());
  }

  double number(const json& j, const std::string& where, bool zero_ok, const char* unit) const {
    if (!j.is_number()) fail(fmt::format("'{}' must be a number ({}), got {}", where, unit, j.dump()));
    const double v = j.get<double>();
    if (!std::isfinite(v) || v < 0 || (!zero_ok && v == 0)) {
      fail(fmt::format("'{}' is {}; it must be {} ({})", where, j.dump(), zero_ok ? ">= 0" : "> 0", unit));
    }
    return v;
  }

  // {"value": v, "source": s} or {"peak": p, "efficiency": e, "source": s} with 0 < e <= 1.
  Quantity quantity(const json& j, const std::string& where, bool zero_ok, const char* unit) const {
    Quantity q;
    if (j.is_object() && j.contains("peak")) {
      fields(j, where, {"peak", "efficiency", "source"});
      q.peak = number(j["peak"], where + ".peak", false, unit);
      q.efficiency = number(j["efficiency"], where + ".efficiency", false, "a fraction of the peak");
      if (q.efficiency > 1) fail(fmt::format("'{}.efficiency' is {}; it must be in (0, 1]", where, q.efficiency));
      q.value = q.peak * q.efficiency;
    } else {
      if (j.is_object() && !j.contains("value") && !j.contains("peak")) {
        fail(fmt::format("'{}' needs either 'value' or 'peak' and 'efficiency' (and 'source')", where));
      }
      fields(j, where, {"value", "source"});
      q.value = number(j["value"], where + ".value", zero_ok, unit);
    }
    q.source = text(j["source"], where + ".source");
    if (q.source.empty()) fail(fmt::format("'{}.source' is empty; say where the number comes from", where));
    return q;
  }

  LinkProfile link(const json& j, const std::string& where) const {
    fields(j, where, {"name", "latency", "bandwidth"}, {"one_way_bandwidth", "exchange_ladder", "burst"});
    LinkProfile l;
    l.name = text(j["name"], where + ".name");
    l.latency = quantity(j["latency"], where + ".latency", true, "seconds per message");
    l.bandwidth = quantity(j["bandwidth"], where + ".bandwidth", false, "bytes per second per direction");
    if (j.contains("one_way_bandwidth")) {
      l.one_way_bandwidth =
          quantity(j["one_way_bandwidth"], where + ".one_way_bandwidth", false, "bytes per second, one direction");
    }
    if (j.contains("burst"))
      l.burst = quantity(j["burst"], where + ".burst", true, "bytes passed at once after idling");
    if (j.contains("exchange_ladder")) {
      const std::string w = where + ".exchange_ladder";
      const json& x = j["exchange_ladder"];
      fields(x, w, {"points", "source"}, {"pairs", "one_pair_points"});
      ExchangeLadder ladder{points(x["points"], w + ".points"), text(x["source"], w + ".source"), 1, {}};
      if (x.contains("pairs")) ladder.pairs = integer(x["pairs"], w + ".pairs", 1, 1 << 20);
      if (x.contains("one_pair_points")) ladder.one_pair = points(x["one_pair_points"], w + ".one_pair_points");
      if (ladder.pairs > 1 && ladder.one_pair.empty()) {
        fail(fmt::format("'{}' has {} pairs side by side but no 'one_pair_points' (the same sizes with one pair)", w,
                         ladder.pairs));
      }
      l.exchange_ladder = ladder;
    }
    return l;
  }

  DeviceProfile device(const json& j) const {
    fields(j, "device", {"name", "compute", "memory_read", "memory_write", "update", "reduce"},
           {"nvlink", "step_variation", "gradient_copy", "reduce_f16", "reduce_bf16", "cast_f16", "cast_bf16",
            "precisions", "shared_update"});
    DeviceProfile d;
    d.name = text(j["name"], "device.name");
    if (j.contains("nvlink")) d.nvlink = text(j["nvlink"], "device.nvlink");
    std::vector<std::string> kinds(kComputeKinds.begin(), kComputeKinds.end());
    fields(j["compute"], "device.compute", kinds);
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      d.compute[k] = quantity(j["compute"][kinds[k]], "device.compute." + kinds[k], false, "FLOP per second");
    }
    d.memory_read = quantity(j["memory_read"], "device.memory_read", false, "bytes per second");
    d.memory_write = quantity(j["memory_write"], "device.memory_write", false, "bytes per second");
    d.update = quantity(j["update"], "device.update", false, "parameters per second");
    if (j.contains("shared_update")) {
      d.shared_update = quantity(j["shared_update"], "device.shared_update", false,
                                 "parameters per second of the update of ranks sharing one copy of the weights");
    }
    d.reduce = quantity(j["reduce"], "device.reduce", false, "bytes per second");
    if (j.contains("step_variation")) {
      const char* what = "a fraction: standard deviation / mean of a worker's compute time per step";
      d.step_variation = quantity(j["step_variation"], "device.step_variation", true, what);
      if (d.step_variation->value >= 1) {
        fail(fmt::format("'device.step_variation' is {}; it must be in [0, 1) ({}, e.g. 0.02 for 2%)",
                         d.step_variation->value, what));
      }
    }
    if (j.contains("gradient_copy")) {
      d.gradient_copy = quantity(j["gradient_copy"], "device.gradient_copy", false,
                                 "bytes per second of a gradient copied into its bucket");
    }
    if (j.contains("precisions")) {
      const json& p = j["precisions"];
      if (!p.is_object()) fail("'device.precisions' must be an object: {\"bf16\": {\"conv2d\": ..., \"linear\": ...}}");
      for (const auto& [name, rates] : p.items()) {
        const std::string where = "device.precisions." + name;
        if (name == "f32" || std::find(kPrecisions.begin(), kPrecisions.end(), name) == kPrecisions.end())
          fail(fmt::format("'{}': not a precision the model prices; use one of tf32, bf16, f16, fp8", where));
        fields(rates, where, {"conv2d", "linear"},
               {"activation_bytes", "gradient_bytes", "batch_norm", "pooling", "elementwise"});
        PrecisionRates r{quantity(rates["conv2d"], where + ".conv2d", false, "FLOP per second"),
                         quantity(rates["linear"], where + ".linear", false, "FLOP per second"),
                         std::nullopt,
                         std::nullopt,
                         {}};
        for (const char* kind : {"batch_norm", "pooling", "elementwise"}) {
          if (rates.contains(kind))
            r.other_kinds.emplace_back(kind, quantity(rates[kind], where + "." + kind, false, "FLOP per second"));
        }
        if (rates.contains("activation_bytes")) {
          r.activation_bytes = quantity(rates["activation_bytes"], where + ".activation_bytes", false,
                                        "bytes per activation element between layers");
        }
        if (rates.contains("gradient_bytes")) {
          r.gradient_bytes = quantity(rates["gradient_bytes"], where + ".gradient_bytes", false,
                                      "bytes per element of an activation's gradient");
        }
        d.precisions.emplace_back(name, std::move(r));
      }
    }
    constexpr const char* kSums = "bytes per second of 16-bit sums";
    constexpr const char* kCasts = "f32 elements per second cast to the 16-bit format and back";
    for (auto [key, field, unit] :
         {std::tuple{"reduce_f16", &d.reduce_f16, kSums}, std::tuple{"reduce_bf16", &d.reduce_bf16, kSums},
          std::tuple{"cast_f16", &d.cast_f16, kCasts}, std::tuple{"cast_bf16", &d.cast_bf16, kCasts}}) {
      if (j.contains(key)) *field = quantity(j[key], fmt::format("device.{}", key), false, unit);
    }
    return d;
  }

  NodeProfile node(const json& j) const {
    fields(j, "node", {"accelerators", "intra_link", "disk_read"},
           {"overlap", "core_round_trip", "cores", "turn_taking", "turn_taking_shm"});
    NodeProfile n;
    n.accelerators = integer(j["accelerators"], "node.accelerators", 1, 1 << 20);
    n.intra_link = link(j["intra_link"], "node.intra_link");
    n.disk_read = quantity(j["disk_read"], "node.disk_read", false, "bytes per second");
    if (j.contains("overlap")) n.overlap = overlap(j["overlap"], "node.overlap");
    if (j.contains("core_round_trip")) {
      n.core_round_trip = quantity(j["core_round_trip"], "node.core_round_trip", false,
                                   "seconds for a cache line to go to another core and back");
    }
    if (j.contains("cores")) {
      n.cores = quantity(j["cores"], "node.cores", false, "logical CPUs of one host");
      if (n.cores->value < 1) fail(fmt::format("'node.cores' is {}; a host has at least 1 CPU", n.cores->value));
    }
    for (const auto& [field, target] :
         {std::pair{"turn_taking", &n.turn_taking}, std::pair{"turn_taking_shm", &n.turn_taking_shm}}) {
      if (!j.contains(field)) continue;
      *target = quantity(j[field], fmt::format("node.{}", field), true,
                         "a fraction of a step's compute that ranks time-sharing CPUs add by taking turns");
    }
    return n;
  }

  // {"compute": Q, "comm": Q}, each a fraction in (0, 1].
  OverlapProfile overlap(const json& j, const std::string& where) const {
    fields(j, where, {"compute", "comm"});
    OverlapProfile o;
    o.compute = quantity(j["compute"], where + ".compute", false, "a fraction in (0, 1]");
    o.comm = quantity(j["comm"], where + ".comm", false, "a fraction in (0, 1]");
    for (const auto& [q, field] : {std::pair{&o.compute, "compute"}, std::pair{&o.comm, "comm"}}) {
      if (q->value > 1) fail(fmt::format("'{}.{}' is {}; it must be in (0, 1]", where, field, q->value));
    }
    return o;
  }

  // mpi_allreduce and shm_allreduce: one shape under two names.
  MeasuredAllreduce measured_allreduce(const json& j, const std::string& where) const {
    fields(j, where, {"workers", "points", "source"}, {"overlap"});
    MeasuredAllreduce m;
    m.workers = integer(j["workers"], where + ".workers", 2, 1 << 24);
    m.source = text(j["source"], where + ".source");
    m.points = points(j["points"], where + ".points");
    if (j.contains("overlap")) m.overlap = overlap(j["overlap"], where + ".overlap");
    return m;
  }

  // [{"bytes": B, "seconds": S}, ...]: positive, bytes ascending.
  std::vector<std::pair<double, double>> points(const json& pts, const std::string& where) const {
    std::vector<std::pair<double, double>> out;
    if (!pts.is_array() || pts.empty()) {
      fail(
          fmt::format("'{}' must be a non-empty array of {{\"bytes\": B, \"seconds\": S}}, got {}", where, pts.dump()));
    }
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const std::string at = fmt::format("{}[{}]", where, i);
      fields(pts[i], at, {"bytes", "seconds"});
      const json& b = pts[i]["bytes"];
      const json& s = pts[i]["seconds"];
      if (!b.is_number() || !s.is_number() || !(b.get<double>() > 0) || !(s.get<double>() > 0) ||
          !std::isfinite(b.get<double>()) || !std::isfinite(s.get<double>())) {
        fail(fmt::format("'{}' is {}; bytes and seconds must be positive numbers", at, pts[i].dump()));
      }
      if (!out.empty() && b.get<double>() <= out.back().first) {
        fail(fmt::format("'{}' has {} bytes, not more than the point before it; list the sizes in ascending order", at,
                         b.get<double>()));
      }
      out.emplace_back(b.get<double>(), s.get<double>());
    }
    return out;
  }

 private:
  std::string origin_;
};

json quantity_json(const Quantity& q) {
  if (q.efficiency > 0) return {{"peak", q.peak}, {"efficiency", q.efficiency}, {"source", q.source}};
  return {{"value", q.value}, {"source", q.source}};
}

json points_json(const std::vector<std::pair<double, double>>& points) {
  json out = json::array();
  for (const auto& [bytes, seconds] : points) out.push_back({{"bytes", bytes}, {"seconds", seconds}});
  return out;
}

json overlap_json(const OverlapProfile& o) {
  return {{"compute", quantity_json(o.compute)}, {"comm", quantity_json(o.comm)}};
}

json measured_allreduce_json(const MeasuredAllreduce& m) {
  json j = {{"workers", m.workers}, {"points", points_json(m.points)}, {"source", m.source}};
  if (m.overlap) j["overlap"] = overlap_json(*m.overlap);
  return j;
}

json link_json(const LinkProfile& l) {
  json j = {{"name", l.name}, {"latency", quantity_json(l.latency)}, {"bandwidth", quantity_json(l.bandwidth)}};
  if (l.one_way_bandwidth) j["one_way_bandwidth"] = quantity_json(*l.one_way_bandwidth);
  if (l.burst) j["burst"] = quantity_json(*l.burst);
  if (l.exchange_ladder) {
    const ExchangeLadder& x = *l.exchange_ladder;
    json ladder = {{"points", points_json(x.points)}, {"source", x.source}};
    if (x.pairs > 1) {
      ladder["pairs"] = x.pairs;
      ladder["one_pair_points"] = points_json(x.one_pair);
    }
    j["exchange_ladder"] = ladder;
  }
  return j;
}

}  // namespace

std::size_t compute_kind_index(std::string_view kind) {
  if (kind == "conv2d") return 0;
  if (kind == "linear") return 1;
  if (kind == "batch_norm") return 2;
  if (kind == "max_pool" || kind == "avg_pool" || kind == "global_avg_pool") return 3;
  return 4;
}

std::string_view parse_precision(std::string_view name) {
  for (std::string_view p : kPrecisions)
    if (p == name) return p;
  throw InputError(fmt::format("--precision: unknown precision '{}'; valid: {}", name, fmt::join(kPrecisions, ", ")));
}

DeviceProfile at_precision(const DeviceProfile& device, const std::string& profile_name, std::string_view precision) {
  const std::string_view p = parse_precision(precision);
  if (p == "f32") return device;
  const auto it = std::find_if(device.precisions.begin(), device.precisions.end(),
                               [p](const auto& entry) { return entry.first == p; });
  if (it == device.precisions.end()) {
    std::vector<std::string> has;
    for (const auto& entry : device.precisions) has.push_back(entry.first);
    throw InputError(fmt::format(
        "the profile '{}' has no rate for --precision {}: it lacks 'device.precisions.{}' (conv2d and linear, each "
        "peak and efficiency or value, with its source){}",
        profile_name, p, p,
        has.empty() ? std::string("; it prices f32 only") : fmt::format("; it has {} and f32", fmt::join(has, ", "))));
  }
  DeviceProfile d = device;
  d.compute[compute_kind_index("conv2d")] = it->second.conv2d;
  d.compute[compute_kind_index("linear")] = it->second.linear;
  for (const auto& [kind, rate] : it->second.other_kinds) d.compute[compute_kind_index(kind)] = rate;
  d.activation_element_bytes = it->second.activation_bytes ? it->second.activation_bytes->value
                               : p == "tf32"               ? 4.0
                                                           : 2.0;
  d.gradient_element_bytes = it->second.gradient_bytes ? it->second.gradient_bytes->value : d.activation_element_bytes;
  d.precision = std::string(p);
  return d;
}

ProfileFragment parse_profile_fragment(const json& j, const std::string& origin) {
  const Reader r(origin);
  r.fields(j, "", {"dtrain_profile", "name"},
           {"description", "device", "node", "network", "link", "mpi_allreduce", "shm_allreduce"});
  const json& version = j["dtrain_profile"];
  if (!version.is_number_integer() || version.get<int>() != kProfileSchemaVersion) {
    r.fail(fmt::format("'dtrain_profile' is {}; this dtrain reads schema version {}", version.dump(),
                       kProfileSchemaVersion));
  }
  ProfileFragment f;
  f.name = r.text(j["name"], "name");
  if (j.contains("description")) f.description = r.text(j["description"], "description");
  if (j.contains("device")) f.device = r.device(j["device"]);
  if (j.contains("node")) f.node = r.node(j["node"]);
  if (j.contains("network")) f.network = r.link(j["network"], "network");
  if (j.contains("link")) f.link = r.link(j["link"], "link");
  if (j.contains("mpi_allreduce")) f.mpi_allreduce = r.measured_allreduce(j["mpi_allreduce"], "mpi_allreduce");
  if (j.contains("shm_allreduce")) f.shm_allreduce = r.measured_allreduce(j["shm_allreduce"], "shm_allreduce");
  if (!f.device && !f.node && !f.network && !f.link) {
    r.fail("it has none of 'device', 'node', 'network' or 'link'; a profile needs at least one");
  }
  return f;
}

ProfileFragment read_profile_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw InputError(
        fmt::format("cannot open profile file '{}'; give a path to a profile JSON file or a built-in "
                    "name (dtrain predict --list-profiles)",
                    path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_profile_text(text.str(), path);
}

ProfileFragment parse_profile_text(std::string_view text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error for bad syntax; other json exceptions (e.g. invalid UTF-8 in a string) too.
    throw DataError(fmt::format("profile {}: not valid JSON: {}", origin, e.what()));
  }
  return parse_profile_fragment(j, origin);
}

json profile_to_json(const Profile& p) {
  json compute = json::object();
  for (std::size_t k = 0; k < kComputeKinds.size(); ++k) {
    compute[std::string(kComputeKinds[k])] = quantity_json(p.device.compute[k]);
  }
  json device = {{"name", p.device.name},
                 {"compute", compute},
                 {"memory_read", quantity_json(p.device.memory_read)},
                 {"memory_write", quantity_json(p.device.memory_write)},
                 {"update", quantity_json(p.device.update)},
                 {"reduce", quantity_json(p.device.reduce)}};
  if (!p.device.nvlink.empty()) device["nvlink"] = p.device.nvlink;
  if (p.device.step_variation) device["step_variation"] = quantity_json(*p.device.step_variation);
  if (p.device.gradient_copy) device["gradient_copy"] = quantity_json(*p.device.gradient_copy);
  if (p.device.shared_update) device["shared_update"] = quantity_json(*p.device.shared_update);
  if (p.device.reduce_f16) device["reduce_f16"] = quantity_json(*p.device.reduce_f16);
  if (p.device.reduce_bf16) device["reduce_bf16"] = quantity_json(*p.device.reduce_bf16);
  if (p.device.cast_f16) device["cast_f16"] = quantity_json(*p.device.cast_f16);
  if (p.device.cast_bf16) device["cast_bf16"] = quantity_json(*p.device.cast_bf16);
  if (!p.device.precisions.empty()) {
    json precisions = json::object();
    for (const auto& [name, rates] : p.device.precisions) {
      precisions[name] = {{"conv2d", quantity_json(rates.conv2d)}, {"linear", quantity_json(rates.linear)}};
      if (rates.activation_bytes) precisions[name]["activation_bytes"] = quantity_json(*rates.activation_bytes);
      if (rates.gradient_bytes) precisions[name]["gradient_bytes"] = quantity_json(*rates.gradient_bytes);
      for (const auto& [kind, rate] : rates.other_kinds) precisions[name][kind] = quantity_json(rate);
    }
    device["precisions"] = precisions;
  }
  json node = {{"accelerators", p.node.accelerators},
               {"intra_link", link_json(p.node.intra_link)},
               {"disk_read", quantity_json(p.node.disk_read)}};
  if (p.node.overlap) {
    node["overlap"] = overlap_json(*p.node.overlap);
  }
  if (p.node.core_round_trip) node["core_round_trip"] = quantity_json(*p.node.core_round_trip);
  if (p.node.cores) node["cores"] = quantity_json(*p.node.cores);
  if (p.node.turn_taking) node["turn_taking"] = quantity_json(*p.node.turn_taking);
  if (p.node.turn_taking_shm) node["turn_taking_shm"] = quantity_json(*p.node.turn_taking_shm);
  json j = {{"dtrain_profile", kProfileSchemaVersion}, {"name", p.name}, {"device", device}, {"node", node}};
  if (!p.description.empty()) j["description"] = p.description;
  if (p.network) j["network"] = link_json(*p.network);
  if (p.mpi_allreduce) j["mpi_allreduce"] = measured_allreduce_json(*p.mpi_allreduce);
  if (p.shm_allreduce) j["shm_allreduce"] = measured_allreduce_json(*p.shm_allreduce);
  return j;
}

}  // namespace dtrain::perf
