#include "schedule/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/split.h"
#include "nn/models/models.h"
#include "perfmodel/workload.h"

namespace dtrain::schedule {
namespace {

constexpr std::int64_t kTiresiasBatch = 32;  // the Tiresias trace's batch per GPU

const std::vector<std::string>& dtrain_columns() {
  static const std::vector<std::string> c{"name",      "model",     "dataset",     "epochs",  "batch",
                                          "min_ranks", "max_ranks", "submit_time", "priority"};
  return c;
}

const std::vector<std::string>& tiresias_columns() {
  static const std::vector<std::string> c{"job_id",     "num_gpu",  "submit_time", "iterations",
                                          "model_name", "duration", "interval"};
  return c;
}

std::string trimmed(std::string s) {
  const auto blank = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r'; };
  while (!s.empty() && blank(s.back())) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && blank(s[start])) ++start;
  return s.substr(start);
}

// One data row: its fields by column name, with the row's line for messages.
class TraceRow {
 public:
  TraceRow(std::map<std::string, std::string> fields, std::string where)
      : fields_(std::move(fields)), where_(std::move(where)) {}

  const std::string& where() const { return where_; }

  std::string text(const std::string& column, bool may_be_empty = false) const {
    const std::string& v = fields_.at(column);
    if (v.empty() && !may_be_empty) {
      throw InputError(fmt::format("{}: field '{}' is missing (empty); give a value", where_, column));
    }
    return v;
  }

  std::int64_t whole(const std::string& column, std::int64_t lowest) const {
    const std::string v = text(column);
    std::int64_t out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size()) {
      throw InputError(fmt::format("{}: field '{}' is '{}', not a whole number", where_, column, v));
    }
    check_lowest(column, static_cast<double>(out), static_cast<double>(lowest));
    return out;
  }

  double number(const std::string& column, double lowest) const {
    const std::string v = text(column);
    double out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(out)) {
      throw InputError(fmt::format("{}: field '{}' is '{}', not a number", where_, column, v));
    }
    check_lowest(column, out, lowest);
    return out;
  }

 private:
  void check_lowest(const std::string& column, double v, double lowest) const {
    if (v >= lowest) return;
    throw InputError(fmt::format("{}: field '{}' is {}; it must be {}", where_, column, v,
                                 lowest > 0 ? "positive" : "zero or more"));
  }

  std::map<std::string, std::string> fields_;
  std::string where_;
};

int as_ranks(std::int64_t v) { return static_cast<int>(std::min<std::int64_t>(v, std::numeric_limits<int>::max())); }

void check_model(const TraceRow& row, const std::string& column, const std::string& model) {
  const std::vector<std::string>& known = model_names();
  if (std::find(known.begin(), known.end(), model) != known.end()) return;
  throw InputError(
      fmt::format("{}: field '{}': dtrain has no model '{}'; dtrain knows models: {} (map the trace's "
                  "models onto these)",
                  row.where(), column, model, fmt::join(known, ", ")));
}

Job dtrain_job(const TraceRow& row) {
  Job j;
  j.name = row.text("name");
  j.model = row.text("model");
  check_model(row, "model", j.model);
  j.dataset = row.text("dataset", true);
  if (j.dataset.empty()) j.dataset = default_dataset(j.model);
  j.epochs = static_cast<int>(std::min<std::int64_t>(row.whole("epochs", 1), 1'000'000));
  j.batch = row.whole("batch", 1);
  j.min_ranks = as_ranks(row.whole("min_ranks", 1));
  j.max_ranks = as_ranks(row.whole("max_ranks", 1));
  j.submit_time = row.number("submit_time", 0);
  j.priority = static_cast<int>(row.whole("priority", std::numeric_limits<int>::min()));
  if (j.min_ranks > j.max_ranks) {
    throw InputError(fmt::format("{}: min_ranks {} is more than max_ranks {}; give min_ranks <= max_ranks", row.where(),
                                 j.min_ranks, j.max_ranks));
  }
  return j;
}

Job tiresias_job(const TraceRow& row) {
  Job j;
  j.name = row.text("job_id");
  j.model = row.text("model_name");
  check_model(row, "model_name", j.model);
  j.dataset = default_dataset(j.model);
  j.batch = kTiresiasBatch;
  const std::int64_t gpus = row.whole("num_gpu", 1);
  const std::int64_t iterations = row.whole("iterations", 1);
  j.min_ranks = 1;
  j.max_ranks = as_ranks(gpus);
  j.submit_time = row.number("submit_time", 0);
  j.trace_duration = row.number("duration", 0);
  row.number("interval", 0);  // checked, unused
  if (iterations > std::numeric_limits<std::int64_t>::max() / (kTiresiasBatch * gpus)) {
    throw InputError(
        fmt::format("{}: {} iterations x {} GPUs is too much work to count", row.where(), iterations, gpus));
  }
  j.samples = iterations * kTiresiasBatch * gpus;
  return j;
}

}  // namespace

std::string default_dataset(const std::string& model) {
  if (model == "resnet50") return "imagenet";
  if (model.starts_with("resnet")) return "cifar10";
  return "fashion-mnist";
}

std::vector<Job> parse_trace(std::string_view text, const std::string& origin, int cluster_ranks) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::vector<std::string> header;
  std::vector<Job> jobs;
  bool tiresias = false;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string content = trimmed(line);
    if (content.empty() || content[0] == '#') continue;
    std::vector<std::string> fields = split_list(content, ',');
    for (std::string& f : fields) f = trimmed(f);
    if (header.empty()) {
      header = fields;
      const auto has_all = [&](const std::vector<std::string>& columns) {
        return std::all_of(columns.begin(), columns.end(), [&](const std::string& c) {
          return std::find(header.begin(), header.end(), c) != header.end();
        });
      };
      tiresias = has_all(tiresias_columns());
      if (!tiresias && !has_all(dtrain_columns())) {
        throw InputError(fmt::format(
            "{}: line {}: the header '{}' is neither dtrain's trace ({}) nor Tiresias's ({}); every column of one "
            "of them must be there",
            origin, number, content, fmt::join(dtrain_columns(), ","), fmt::join(tiresias_columns(), ",")));
      }
      continue;
    }
    const std::string where = fmt::format("{}: row {} (line {})", origin, jobs.size() + 1, number);
    if (fields.size() != header.size()) {
      throw InputError(fmt::format("{}: has {} fields, the header has {}; a field is missing or extra", where,
                                   fields.size(), header.size()));
    }
    std::map<std::string, std::string> by_column;
    for (std::size_t i = 0; i < header.size(); ++i) by_column[header[i]] = fields[i];
    const TraceRow row(std::move(by_column), where);
    Job j = tiresias ? tiresias_job(row) : dtrain_job(row);
    j.row = static_cast<int>(jobs.size()) + 1;
    try {
      perf::dataset_info(j.dataset);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: field 'dataset': {}", where, e.what()));
    }
    if (j.min_ranks > cluster_ranks) {
      throw InputError(fmt::format("{}: job '{}' can never fit: needs {} ranks, the cluster has {}", where, j.name,
                                   j.min_ranks, cluster_ranks));
    }
    j.max_ranks = std::min(j.max_ranks, cluster_ranks);
    jobs.push_back(std::move(j));
  }
  if (header.empty()) throw InputError(fmt::format("{}: no header; the trace is empty", origin));
  if (jobs.empty()) throw InputError(fmt::format("{}: the trace has a header but no job", origin));
  return jobs;
}

std::vector<Job> read_trace(const std::string& path, int cluster_ranks) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("cannot read the trace '{}'; give an existing CSV file to --trace", path));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_trace(text.str(), path, cluster_ranks);
}

}  // namespace dtrain::schedule
