// `dtrain schedule`: a queue of training jobs (a trace) simulated on a cluster under one
// scheduling policy or all of them, each job priced by the performance model before it runs
// (src/schedule, docs/scheduling.md). The decisions come out as a sequence of (time, job,
// ranks) actions (ScheduleResult::actions); a backend that drives real jobs carries out the same
// actions, asking the same Policy object at the same events.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/dtrain/commands.h"
#include "core/error.h"
#include "core/split.h"
#include "perfmodel/report.h"
#include "schedule/cluster.h"
#include "schedule/explain_decision.h"
#include "schedule/job_pricing.h"
#include "schedule/policy.h"
#include "schedule/schedule_report.h"
#include "schedule/schedule_svg.h"
#include "schedule/simulator.h"
#include "schedule/slurm_backend.h"
#include "schedule/trace.h"

namespace dtrain::cli {
namespace {

struct ScheduleOptions {
  std::string trace;
  std::string cluster_file;
  schedule::Cluster cluster;
  bool nodes_given = false, ranks_given = false, profile_given = false, preempt_given = false, suspend_given = false;
  std::string preempt = "requeue";
  std::string policy = "all";
  std::string detail = "model";  // the schedule shown in full under --policy all
  double slice = 600;
  int probes = 5;
  double probe_seconds = 90;
  double knee = 0.5;
  std::string thresholds;
  bool explain = false;
  bool json = false;
  std::string svg;
  bool fixed_ranks = false;  // a started job keeps its first rank count (implied by --submit)
  // --submit: run the queue on Slurm (schedule/slurm_backend.h).
  bool submit = false;
  schedule::SlurmRunOptions slurm;
  std::string train_flags;  // --submit: more flags for every job, split at spaces
};

// tools/slurm/dtrain-job.sh in the source tree above the dtrain program, or
// share/dtrain/slurm/dtrain-job.sh in its installed prefix.
std::string find_job_script() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  for (std::filesystem::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    for (const char* candidate : {"tools/slurm/dtrain-job.sh", "share/dtrain/slurm/dtrain-job.sh"}) {
      if (std::filesystem::exists(dir / candidate)) return (dir / candidate).string();
    }
    if (dir == dir.parent_path()) break;
  }
  throw InputError(
      "--submit: cannot find dtrain-job.sh (tools/slurm/ in the source tree, share/dtrain/slurm/ installed); give "
      "--job-script FILE");
}

// The queue, its prices and the policies' simulated schedules.
struct ScheduleStudy {
  schedule::Cluster cluster;
  perf::Profile profile;
  std::vector<schedule::Job> jobs;
  schedule::PriceTable prices;
  double pricing_seconds = 0;  // wall time the model took to price the queue
  std::vector<double> thresholds;
  std::vector<schedule::ScheduleResult> results;
};

schedule::Cluster cluster_of(const ScheduleOptions& o) {
  schedule::Cluster c;
  if (!o.cluster_file.empty()) c = schedule::read_cluster_file(o.cluster_file, c);
  if (o.nodes_given) c.nodes = o.cluster.nodes;
  if (o.ranks_given) c.ranks_per_node = o.cluster.ranks_per_node;
  if (o.profile_given) c.profile = o.cluster.profile;
  if (o.preempt_given) c.preempt_by = schedule::parse_preempt_by(o.preempt);
  if (o.suspend_given) c.suspend_seconds = o.cluster.suspend_seconds;
  return c;
}

std::vector<double> parse_thresholds(const std::string& text) {
  std::vector<double> out;
  if (text.empty()) return out;
  for (const std::string& t : split_list(text, ',')) {
    try {
      std::size_t used = 0;
      out.push_back(std::stod(t, &used));
      if (used != t.size()) throw std::invalid_argument(t);
    } catch (const std::exception&) {
      throw InputError(fmt::format("--thresholds: '{}' is not a number; give rank-seconds such as 3600,36000", t));
    }
  }
  return out;
}

ScheduleStudy study(const ScheduleOptions& o) {
  ScheduleStudy s;
  s.cluster = cluster_of(o);
  s.profile = schedule::resolve_cluster(s.cluster);
  if (o.slice < 0)
    throw InputError(fmt::format("--slice must be >= 0 seconds (0: no periodic decision), got {}", o.slice));
  std::vector<std::string> policies = schedule::policy_names();
  if (o.policy != "all") policies = {o.policy};
  schedule::PolicyOptions options;
  options.probes = o.probes;
  options.probe_seconds = o.probe_seconds;
  options.knee = o.knee;
  options.thresholds = parse_thresholds(o.thresholds);
  for (const std::string& name : policies) schedule::make_policy(name, options);  // bad flags before the pricing
  if (o.submit && (policies.size() != 1 || o.policy == "optimus")) {
    throw InputError(
        "--submit runs one policy on Slurm: give --policy fifo, srtf, tiresias or model (optimus's probe runs change "
        "a job's rank count between runs, which a checkpoint resumes exactly only at the count that wrote it)");
  }
  if (o.submit && o.slurm.work_dir.empty()) {
    throw InputError("--submit needs --work-dir DIR for the jobs' checkpoints, logs and output");
  }
  s.jobs = schedule::read_trace(o.trace, s.cluster.ranks());
  const auto start = std::chrono::steady_clock::now();
  s.prices = schedule::price_jobs(s.jobs, s.cluster, s.profile);
  s.pricing_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.thresholds.empty()) options.thresholds = schedule::default_thresholds(s.jobs, s.prices);
  s.thresholds = options.thresholds;
  for (const std::string& name : policies) {
    std::unique_ptr<schedule::Policy> policy = schedule::make_policy(name, options);
    if (!o.submit) {
      s.results.push_back(schedule::simulate(s.jobs, s.prices, s.cluster.ranks(), *policy, {o.slice, o.fixed_ranks}));
      continue;
    }
    schedule::SlurmRunOptions slurm = o.slurm;
    slurm.slice = o.slice;
    if (slurm.job_script.empty()) slurm.job_script = find_job_script();
    std::error_code error;
    slurm.dtrain = std::filesystem::read_symlink("/proc/self/exe", error).string();
    slurm.work_dir = std::filesystem::absolute(slurm.work_dir).string();
    // Each decision and change as it happens: on stderr under --json, which keeps stdout for the JSON.
    const auto note = [&o](const std::string& line) {
      std::FILE* to = o.json ? stderr : stdout;
      fmt::print(to, "{}\n", line);
      std::fflush(to);
    };
    s.results.push_back(schedule::run_on_slurm(s.jobs, s.prices, s.cluster.ranks(), *policy, slurm, note));
  }
  return s;
}

const schedule::ScheduleResult& detailed(const ScheduleStudy& s, const std::string& name) {
  for (const schedule::ScheduleResult& r : s.results) {
    if (r.policy == name) return r;
  }
  if (s.results.size() == 1) return s.results.front();
  throw InputError(fmt::format("--detail '{}' is not a policy that ran; valid: {}", name,
                               fmt::join(schedule::policy_names(), ", ")));
}

std::string describe_study(const ScheduleStudy& s, const ScheduleOptions& o) {
  const schedule::Cluster& c = s.cluster;
  double first = s.jobs.front().submit_time, last = first;
  bool tiresias = false;
  for (const schedule::Job& j : s.jobs) {
    first = std::min(first, j.submit_time);
    last = std::max(last, j.submit_time);
    tiresias = tiresias || j.samples > 0;
  }
  const schedule::PreemptionCost& p = s.prices.jobs.front().preemption;
  const std::string suspension = p.suspends
                                     ? fmt::format("a stop suspends the job and costs {} on the same ranks; a resize: ",
                                                   perf::format_seconds(p.suspend))
                                     : "";
  return fmt::format(
      "cluster: {} nodes x {} ranks = {} ranks; profile {}\n"
      "preemption: {}checkpoint write at {:.2g} GB/s + requeue {} + restart {} + resume at {:.2g} GB/s ({} for job "
      "{})\n"
      "trace {}: {} jobs ({} format) submitted over {}; the model priced every job at every rank count it may run on "
      "in {:.1f} s\n"
      "decisions at arrivals, completions and every {}; optimus: {} probe runs of {} each; tiresias queues at {} "
      "rank-s; model: knee {}\n\n",
      c.nodes, c.ranks_per_node, c.ranks(), perf::describe_profile(s.profile), suspension,
      c.checkpoint_write_bytes_per_s / 1e9, perf::format_seconds(c.requeue_seconds),
      perf::format_seconds(c.restart_seconds), c.checkpoint_read_bytes_per_s / 1e9, perf::format_seconds(p.total()),
      s.jobs.front().name, o.trace, s.jobs.size(), tiresias ? "Tiresias" : "dtrain", perf::format_seconds(last - first),
      s.pricing_seconds, o.slice > 0 ? perf::format_seconds(o.slice) : "never", o.probes,
      perf::format_seconds(o.probe_seconds), fmt::format("{:.0f}", fmt::join(s.thresholds, ", ")), o.knee);
}

int run_schedule(const ScheduleOptions& o) {
  const ScheduleStudy s = study(o);
  const schedule::ScheduleResult& shown = detailed(s, o.policy == "all" ? o.detail : o.policy);
  if (!o.svg.empty()) {
    std::ofstream out(o.svg);
    if (!out) throw InputError(fmt::format("cannot write --svg file '{}'", o.svg));
    out << schedule::schedule_svg(
        shown, s.jobs,
        fmt::format("{}: {} jobs on {} ranks ({})", shown.policy, s.jobs.size(), s.cluster.ranks(), s.cluster.profile));
  }
  if (o.json) {
    nlohmann::json policies = nlohmann::json::array();
    for (const schedule::ScheduleResult& r : s.results) policies.push_back(schedule::schedule_json(r, s.jobs));
    const nlohmann::json out{
        {"cluster",
         {{"nodes", s.cluster.nodes},
          {"ranks_per_node", s.cluster.ranks_per_node},
          {"profile", s.cluster.profile},
          {"requeue_s", s.cluster.requeue_seconds},
          {"restart_s", s.cluster.restart_seconds},
          {"preempt", s.cluster.preempt_by == schedule::PreemptBy::kSuspend ? "suspend" : "requeue"},
          {"suspend_s", s.cluster.suspend_seconds}}},
        {"trace", o.trace},
        {"slice_s", o.slice},
        {"tiresias_thresholds", s.thresholds},
        {"policies", policies}};
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("{}", describe_study(s, o));
  if (s.results.size() > 1) fmt::print("{}\n", schedule::format_comparison(s.results));
  fmt::print("{}", schedule::format_jobs(shown, s.jobs, s.prices));
  if (s.results.size() == 1) fmt::print("\n{}", schedule::format_comparison(s.results));
  if (o.explain) fmt::print("\n{}", schedule::explain_schedule(shown, s.jobs, s.prices));
  if (!o.svg.empty()) fmt::print("Gantt chart of {}: {}\n", shown.policy, o.svg);
  return 0;
}

}  // namespace

Action register_schedule(CLI::App& app) {
  auto o = std::make_shared<ScheduleOptions>();
  CLI::App* c = app.add_subcommand(
      "schedule",
      "Simulate a queue of training jobs on a cluster under scheduling policies, each job priced by the performance "
      "model (docs/scheduling.md)");
  c->add_option("--trace", o->trace,
                "CSV of jobs: dtrain's (name,model,dataset,epochs,batch,min_ranks,max_ranks,submit_time,priority) or "
                "Tiresias's (job_id,num_gpu,submit_time,iterations,model_name,duration,interval)")
      ->required();
  CLI::Option* nodes = c->add_option("--nodes", o->cluster.nodes, "Nodes of the cluster")->capture_default_str();
  CLI::Option* ranks = c->add_option("--ranks-per-node", o->cluster.ranks_per_node,
                                     "Ranks per node (default: the profile's devices per node, which it must equal)");
  CLI::Option* profile = c->add_option(
      "--profile", o->cluster.profile,
      "Hardware profile of one node and the network (e.g. 8xv100-nvlink+ib-edr; dtrain predict --list-profiles)");
  c->add_option("--cluster", o->cluster_file,
                "JSON with the cluster (nodes, ranks_per_node, profile) and its preemption costs "
                "(checkpoint_write_bytes_per_s, checkpoint_read_bytes_per_s, requeue_seconds [25], restart_seconds "
                "[2], optimizer_slots [1], preempt [requeue], suspend_seconds [1]); flags win");
  CLI::Option* preempt =
      c->add_option("--preempt", o->preempt,
                    "How a policy stops a running job: requeue (checkpoint, requeue, restart and resume: every cost "
                    "the cluster lists) or suspend (scontrol suspend/resume: the job keeps its memory and resumes in "
                    "place after --suspend-seconds)")
          ->capture_default_str()
          ->check(CLI::IsMember({"requeue", "suspend"}));
  CLI::Option* suspend_seconds = c->add_option("--suspend-seconds", o->cluster.suspend_seconds,
                                               "--preempt suspend: seconds from the resume to the job's next step")
                                     ->capture_default_str()
                                     ->check(CLI::NonNegativeNumber);
  c->add_option("--policy", o->policy, "fifo, srtf, tiresias, optimus, model, or all to compare them")
      ->capture_default_str();
  c->add_option("--detail", o->detail,
                "With --policy all: the policy whose per-job table, --explain and --svg are shown")
      ->capture_default_str();
  c->add_option("--slice", o->slice, "Seconds between periodic decisions besides arrivals and completions (0: none)")
      ->capture_default_str();
  c->add_option("--probes", o->probes, "optimus: probe runs per job before it is allocated")->capture_default_str();
  c->add_option("--probe-seconds", o->probe_seconds, "optimus: seconds of progress each probe run lasts")
      ->capture_default_str();
  c->add_option("--knee", o->knee,
                "model: smallest remaining service first, each job taking ranks while one more saves at least this "
                "fraction of a linear speedup's; 0: Optimus's greedy marginal gain from every job's minimum")
      ->capture_default_str();
  c->add_option("--thresholds", o->thresholds,
                "tiresias: the queues' thresholds of attained service in rank-seconds, ascending, comma-separated "
                "(default: one, at the median job's demand at its requested ranks)");
  c->add_flag("--explain", o->explain, "Print every decision with the model's terms behind the rank count");
  c->add_flag("--json", o->json, "Print JSON for tools (every policy's schedule and decisions)");
  c->add_option("--svg", o->svg, "Write a Gantt chart of the schedule (the --detail one under --policy all)");
  c->add_flag("--fixed-ranks", o->fixed_ranks,
              "Simulate as Slurm runs it: a job that has run keeps its first rank count (stopped and resumed, never "
              "resized); --submit implies it");
  c->add_flag(
      "--submit", o->submit,
      "Run the queue on Slurm (sbatch, scontrol requeuehold/release or suspend/resume; SLURM_CONF as for Slurm's own "
      "commands) under --policy, each job a preemption-safe dtrain train (dtrain rows only); prints what "
      "happened, measured");
  c->add_option("--work-dir", o->slurm.work_dir,
                "--submit: directory of the jobs' checkpoints (DIR/NAME), logs (DIR/NAME.jsonl) and output "
                "(DIR/NAME.out)");
  c->add_option("--job-script", o->slurm.job_script,
                "--submit: the batch script (default: tools/slurm/dtrain-job.sh, or share/dtrain/slurm/ installed)");
  c->add_option("--launcher", o->slurm.launcher, "--submit: srun (--mpi=pmix) or mpirun inside the allocation")
      ->capture_default_str()
      ->check(CLI::IsMember({"srun", "mpirun"}));
  c->add_option("--partition", o->slurm.partition, "--submit: the Slurm partition (default: the cluster's)");
  c->add_option("--train-flags", o->train_flags,
                "--submit: more flags for every job's dtrain train, space-separated (e.g. \"--allreduce ring --limit "
                "4096\"); the model prices the trace's rows without them");
  c->add_option("--threads", o->slurm.threads, "--submit: compute threads of every rank")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return [c, o, nodes, ranks, profile, preempt, suspend_seconds]() {
    if (!c->parsed()) return -1;
    o->preempt_given = preempt->count() > 0;
    o->suspend_given = suspend_seconds->count() > 0;
    o->nodes_given = nodes->count() > 0;
    o->ranks_given = ranks->count() > 0;
    o->profile_given = profile->count() > 0;
    if (o->submit) o->fixed_ranks = true;
    std::istringstream words(o->train_flags);
    for (std::string w; words >> w;) o->slurm.train_flags.push_back(w);
    return run_schedule(*o);
  };
}

}  // namespace dtrain::cli
