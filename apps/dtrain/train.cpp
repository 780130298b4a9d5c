// `dtrain train`: train a model on a dataset, evaluate after each epoch, log metrics.
#include <fmt/format.h>
#include <unistd.h>

#include <thread>

#include "apps/dtrain/checkpoint_flags.h"
#include "apps/dtrain/commands.h"
#include "apps/dtrain/distributed.h"
#include "apps/dtrain/large_batch_flags.h"
#include "apps/dtrain/pipeline_flags.h"
#include "apps/dtrain/ps_mode.h"
#include "apps/dtrain/slowdown_flags.h"
#include "calibration/training_prediction.h"
#include "comm/agreement.h"
#include "core/threads.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "nn/init.h"
#include "nn/models/models.h"
#include "nn/summary.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "parallel/data_parallel.h"
#include "ps/ps_updater.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "train/extensions.h"
#include "train/stop_extension.h"
#include "train/stop_signal.h"
#include "train/trace_recorder.h"
#include "train/trainer.h"

namespace dtrain::cli {
namespace {

struct TrainOptions {
  std::string model = "lenet";
  std::string dataset = "fashion-mnist";
  std::string data_dir;
  std::int64_t epochs = 3;
  std::int64_t batch = 64;
  std::int64_t eval_batch = 1000;
  std::int64_t limit = 0;
  std::int64_t eval_limit = 0;
  std::int64_t log_every = 0;
  std::string progress = "auto";
  OptimizerConfig optimizer;
  bool momentum_given = false;  // --momentum on the command line
  ScheduleConfig schedule;
  std::string augment;
  int threads = 0;
  std::string precision = "f32";  // the matrix layers' arithmetic (tensor/kernels/cpu/compute_precision.h)
  int prefetch = 2;
  std::uint64_t seed = 0;
  std::string log = "dtrain-log.jsonl";
  // Data-parallel (under mpirun).
  std::string allreduce = "auto";
  std::string comm_dtype = "f32";
  double bucket_mb = 1.0;
  std::string bucket_mb_arg = "1";  // a size in MiB or "auto" (needs --profile)
  bool double_buffering = false;
  int accumulate = 1;
  double timeout = 300;
  std::string chunk_kb = "auto";
  std::string profile;  // predict each epoch's time per step (calibration/training_prediction.h)
  std::string trace;    // Chrome trace of a window of steps (train/trace_recorder.h)
  std::int64_t trace_steps = 10;
  CheckpointFlags checkpoint;
  SlowdownFlags slowdown;
  PsFlags ps;
  PipelineFlags pipeline;
  LargeBatchFlags large_batch;
  double label_smoothing = 0;
};

// Hash of every parameter's name and shape: ranks must build the same model.
std::string parameter_fingerprint(const Module& m) {
  std::string all;
  for (const auto& [name, p] : m.named_parameters()) all += name + p.shape().str() + ";";
  return fmt::format("{:016x}", comm::fnv1a64(all));
}

std::vector<comm::NamedValue> agreement_values(const TrainOptions& o, const Module& model, const Dataset& train) {
  return {{"model", o.model},
          {"parameters", parameter_fingerprint(model)},
          {"dataset", o.dataset},
          {"train samples", std::to_string(train.size())},
          {"epochs", std::to_string(o.epochs)},
          {"batch", std::to_string(o.batch)},
          {"optimizer", o.optimizer.name},
          {"lr", fmt::format("{}", o.optimizer.lr)},
          {"momentum", fmt::format("{}", o.optimizer.momentum)},
          {"schedule", o.schedule.name},
          {"augment", o.augment},
          {"seed", std::to_string(o.seed)},
          {"allreduce", o.allreduce},
          {"comm dtype", o.comm_dtype},
          {"bucket-mb", fmt::format("{}", o.bucket_mb)},
          {"double-buffering", o.double_buffering ? "on" : "off"},
          {"accumulate", std::to_string(o.accumulate)},
          {"checkpoint-every", o.checkpoint.dir.empty() ? "" : o.checkpoint.every},
          {"resume", o.checkpoint.resume ? "yes" : "no"}};
}

nlohmann::json config_record(const TrainOptions& o, const Dataset& train, std::int64_t params) {
  return {{"model", o.model},
          {"dataset", o.dataset},
          {"train_samples", train.size()},
          {"parameters", params},
          {"epochs", o.epochs},
          {"batch", o.batch},
          {"limit", o.limit},
          {"eval_limit", o.eval_limit},
          {"optimizer", o.optimizer.name},
          {"lr", o.optimizer.lr},
          {"momentum", o.optimizer.momentum},
          {"nesterov", o.optimizer.nesterov},
          {"momentum_correction", o.optimizer.momentum_correction},
          {"label_smoothing", o.label_smoothing},
          {"weight_decay", o.optimizer.weight_decay},
          {"schedule", o.schedule.name},
          {"step_epochs", o.schedule.step_epochs},
          {"gamma", o.schedule.gamma},
          {"warmup_epochs", o.schedule.warmup_epochs},
          {"augment", o.augment},
          {"threads", o.threads},
          {"precision", o.precision},
          {"seed", o.seed},
          {"allreduce", o.allreduce},
          {"comm_dtype", o.comm_dtype},
          {"bucket_mb", o.bucket_mb},
          {"double_buffering", o.double_buffering},
          {"accumulate", o.accumulate}};
}

int run_train(TrainOptions o) {
  if (o.threads < 0)
    throw InputError(fmt::format("--threads must be at least 1, or 0 for the default (got {})", o.threads));
  // Check every name before the (slower) dataset load, so a typo fails at once.
  (void)make_optimizer(o.optimizer, {});
  // One step of staleness acts like extra momentum (Mitliagkas et al. 2016, "Asynchrony begets
  // momentum": about as much as a momentum of 0.5 on top), so with double buffering sgd's default
  // momentum mu becomes 2 mu - 1 (0.9 -> 0.8), keeping the total about where the default puts it
  // without staleness. LeNet, f16 + double buffering, 2 ranks x 32, 3 epochs: 0.878 at 0.9, 0.895
  // at 0.8, 0.912 in f32 without double buffering. An explicit --momentum is kept.
  const bool stale_momentum = o.double_buffering && o.optimizer.name == "sgd" && !o.momentum_given;
  const double default_momentum = o.optimizer.momentum;
  if (stale_momentum) o.optimizer.momentum = 2 * default_momentum - 1;
  const AugmentConfig augment = parse_augment(o.augment);
  DataParallelConfig dp;
  dp.algorithm = comm::parse_algorithm(o.allreduce);
  dp.comm_dtype = parse_dtype(o.comm_dtype);
  const bool auto_bucket = o.bucket_mb_arg == "auto";
  if (auto_bucket && o.profile.empty()) {
    throw InputError(
        "--bucket-mb auto chooses by the performance model: give --profile FILE (from dtrain calibrate), "
        "or a size in MiB");
  }
  if (!auto_bucket) {
    char* end = nullptr;
    o.bucket_mb = std::strtod(o.bucket_mb_arg.c_str(), &end);
    if (end == o.bucket_mb_arg.c_str() || *end != '\0') o.bucket_mb = -1;
  }
  if (dp.comm_dtype != DType::kF32 && dp.comm_dtype != DType::kF16 && dp.comm_dtype != DType::kBF16) {
    throw InputError(fmt::format("--comm-dtype must be f32, f16 or bf16, got '{}'", o.comm_dtype));
  }
  if (o.bucket_mb < 0)
    throw InputError(fmt::format("--bucket-mb must be a size in MiB >= 0 or auto, got '{}'", o.bucket_mb_arg));
  dp.bucket_bytes = static_cast<std::size_t>(o.bucket_mb * (1 << 20));
  dp.double_buffering = o.double_buffering;
  dp.accumulate = o.accumulate;
  dp.sync_batch_norm = o.large_batch.sync_bn;

  ProcessGroup group = join_process_group(o.timeout, o.chunk_kb);
  const bool leader = group.rank == 0;
  if (resume_if_requeued(o.checkpoint) && leader) fmt::print("checkpoint: requeued by Slurm: resuming\n");
  const std::optional<ps::PsConfig> ps = ps_config(o.ps, group, o.timeout, dp.comm_dtype, o.optimizer);
  if (ps) check_ps_supports(o.double_buffering);
  // The ranks that train (all but the parameter servers) and the sums over them: a parameter
  // server takes part in no collective after start-up, so parameter-server workers sum nothing.
  // A pipeline's stages load the same batches: its replicas are the data-parallel workers, and
  // the epoch totals are summed over the replicas of each stage (set once the updater exists).
  const bool pipelined = o.pipeline.stages != 1;
  const int workers = ps          ? ps->workers
                      : pipelined ? std::max(1, group.size / std::max(1, o.pipeline.stages))
                                  : group.size;
  PipelineUpdater* pipeline_stage = nullptr;
  const SumAcrossRanks summer =
      ps          ? SumAcrossRanks{}
      : pipelined ? [&pipeline_stage](std::vector<double>& v) { pipeline_stage->sum_over_replicas(v); }
                  : group.summer();
  BatchNormRun bn_run{o.batch / std::max(1, o.accumulate),
                      ps || pipelined ? 0 : group.rank,
                      ps || pipelined ? 1 : group.size,
                      group.active() && !ps && !pipelined,
                      ps.has_value(),
                      {},
                      {}};
  check_batch_norm_flags(o.large_batch, bn_run);
  // --lr is the base batch's rate; the run's follows its global batch (apps/dtrain/large_batch_flags.h).
  const nlohmann::json large_batch =
      apply_large_batch(o.large_batch, static_cast<std::int64_t>(workers) * o.batch, o.epochs, o.optimizer, o.schedule);
  o.schedule.total_epochs = static_cast<double>(o.epochs);
  auto schedule = make_schedule(o.schedule);
  if (o.threads == 0) o.threads = default_threads(group.ranks_on_my_host());
  set_num_threads(o.threads);
  set_compute_precision(parse_compute_precision(o.precision));
  Dataset train = load_dataset(o.dataset, o.data_dir, "train");
  Dataset test = load_dataset(o.dataset, o.data_dir, "test");
  if (o.limit > 0 && o.limit < train.size()) train = subset(train, 0, o.limit);
  if (o.eval_limit > 0 && o.eval_limit < test.size()) test = subset(test, 0, o.eval_limit);

  Rng rng(o.seed);
  const ModelInput input{train.channels, train.height, train.width, train.num_classes};
  auto model = make_model(o.model, input, rng);
  if (wants_zero_gamma(o.large_batch)) init::zero_residual_gammas(*model);
  const Shape sample{input.channels, input.height, input.width};
  const std::optional<PipelineSetup> pipe =
      pipeline_setup(o.pipeline, group, *model, sample, o.timeout,
                     {ps.has_value(), o.accumulate, o.double_buffering, o.large_batch.sync_bn, o.large_batch.bn_stats,
                      dp.algorithm, dp.comm_dtype, dp.bucket_bytes});
  auto* chain = dynamic_cast<Sequential*>(model.get());
  auto optimizer = make_optimizer(
      o.optimizer, pipe ? PipelineUpdater::stage_parameters(*chain, pipe->bounds, group.rank % pipe->stages())
                        : model->parameters());
  const SlowdownConfig slowdown = slowdown_config(o.slowdown, workers, o.seed);
  std::optional<perf::ParameterServerShape> ps_shape;
  if (ps) {
    ps_shape = perf::ParameterServerShape{ps->servers, perf::parse_sync(std::string(ps::sync_mode_name(ps->sync))),
                                          static_cast<int>(ps->staleness)};
  }
  // A pipeline is priced by its own model (pipeline_flags.h: make_pipeline_report), after its updater.
  const auto plan =
      pipe ? std::nullopt
           : perf::plan_for_train(o.profile, *model, sample, o.model, workers, o.batch, dp, o.allreduce == "auto",
                                  auto_bucket, group.active() ? group.comm->options().chunk_bytes : 0, ps_shape,
                                  worker_speeds(slowdown, workers), o.precision);
  if (plan && group.active() && !ps) {
    o.allreduce = comm::algorithm_name(dp.algorithm);
    o.bucket_mb = static_cast<double>(dp.bucket_bytes) / (1 << 20);
    if (leader && plan->choice) fmt::print("--allreduce/--bucket-mb auto: {}\n", perf::describe_choice(*plan->choice));
  }
  if (group.active()) {
    group.worker->run([&](comm::Communicator& c) { comm::check_agreement(c, agreement_values(o, *model, train)); });
  }
  if (ps && group.rank >= ps->workers) {
    return run_parameter_server(group, *ps, o.optimizer, model->num_parameters(), !o.checkpoint.dir.empty());
  }

  // A pipeline's replica r reads shard r; its stages read the same.
  const int shard = pipe ? group.rank / o.pipeline.stages : group.rank;
  const Sampler sampler(train.size(), SamplerConfig::train(o.batch, o.seed, shard, workers));
  // Parameter-server workers and pipelines: rank 0 evaluates the whole test set alone.
  const Sampler test_sampler(test.size(), ps || pipe ? SamplerConfig::eval(o.eval_batch, 0, 1)
                                                     : SamplerConfig::eval(o.eval_batch, group.rank, group.size));
  LoaderOptions train_loading;
  train_loading.prefetch = o.prefetch;
  train_loading.augment = augment;
  train_loading.seed = o.seed;
  LoaderOptions test_loading;
  test_loading.prefetch = o.prefetch;

  const ModelCost cost = total_cost(summarize(*model, Shape{input.channels, input.height, input.width}));
  if (leader) {
    fmt::print("dtrain: {} ({} parameters, {:.1f} MFLOP per sample forward) on {}, {} epochs of {} steps, batch {}",
               o.model, model->num_parameters(), cost.forward_flops / 1e6, train.describe(), o.epochs,
               sampler.batches_per_epoch(), o.batch);
    if (ps) {
      fmt::print(" per worker x {} workers, {} parameter server(s), sync {}{}, pushes in {}", ps->workers, ps->servers,
                 o.ps.sync, ps->sync == ps::SyncMode::kSsp ? fmt::format(" (staleness {})", ps->staleness) : "",
                 o.comm_dtype);
      if (ps->sync != ps::SyncMode::kBsp) {
        const std::string rate = ps->async_lr == ps::AsyncLr::kDivided     ? fmt::format("lr/{}", ps->workers)
                                 : ps->async_lr == ps::AsyncLr::kStaleness ? std::string("lr/tau")
                                                                           : std::string("lr");
        fmt::print(", each push at {}, server momentum {:.3g}", rate,
                   ps::server_optimizer(o.optimizer, ps->async_momentum, o.ps.sync, ps->workers).momentum);
      }
    } else if (pipe) {
      fmt::print(" per replica x {} replica(s) of {} pipeline stages ({}), {} micro-batches of {}, {}", workers,
                 o.pipeline.stages, pipeline::describe(*chain, pipe->bounds), pipe->micro_batches,
                 o.batch / pipe->micro_batches, pipeline::schedule_name(pipe->schedule));
    } else if (group.active()) {
      fmt::print(" per rank x {} ranks, allreduce {} in {}, {}", group.size, o.allreduce, o.comm_dtype,
                 group.describe_chunk());
    }
    fmt::print(", {} thread(s)\n", o.threads);
    if (o.large_batch.lr_scaling != "none" || o.large_batch.base_batch > 0) {
      fmt::print("global batch {}: lr {:.4g} ({} rule from --lr at batch {}), warmup from {:.3g}x\n",
                 large_batch["global_batch"].get<std::int64_t>(), o.optimizer.lr, o.large_batch.lr_scaling,
                 large_batch["base_batch"].get<std::int64_t>(), o.schedule.warmup_start_factor);
    }
    if (stale_momentum) {
      fmt::print(
          "double buffering: sgd momentum {:g} instead of {:g} (one step of staleness adds momentum of its own; "
          "--momentum sets it)\n",
          o.optimizer.momentum, default_momentum);
    }
  }

  nlohmann::json config = config_record(o, train, model->num_parameters());
  config["world_size"] = group.size;
  config.update(large_batch);
  if (pipe) {
    config["pipeline"] = o.pipeline.stages;
    config["replicas"] = workers;
    config["micro_batches"] = pipe->micro_batches;
    config["pipeline_schedule"] = pipeline::schedule_name(pipe->schedule);
    config["stages"] = pipeline::describe(*chain, pipe->bounds);
  }
  if (ps) {
    config["mode"] = "ps";
    config["servers"] = ps->servers;
    config["sync"] = o.ps.sync;
    if (ps->sync == ps::SyncMode::kSsp) config["staleness"] = ps->staleness;
    if (ps->sync != ps::SyncMode::kBsp) {
      config["async_lr"] = ps::async_lr_name(ps->async_lr);
      config["server_momentum"] =
          ps::server_optimizer(o.optimizer, ps->async_momentum, o.ps.sync, ps->workers).momentum;
    }
  }
  // The machine state same-host communication runs in (core/core_round_trip.h), for the log:
  // explain compares it with the profile's. A measurement, not configuration: a resumed run
  // need not match it.
  const std::optional<double> core_round_trip = ps ? std::nullopt : group.core_round_trip();
  if (group.active()) config["chunk_kb"] = static_cast<double>(group.comm->options().chunk_bytes) / 1024;
  // Parameter-server runs: worker 0 checkpoints alone, its model and optimizer filled from the
  // servers before each checkpoint; on resume it restores them before the servers start from them,
  // and tells the other workers the step to continue from.
  ps::PsUpdater* ps_worker = nullptr;
  std::unique_ptr<Checkpointer> checkpointer;
  if ((!ps || leader) && !pipe) {
    std::function<void()> fetch_from_servers;
    if (ps) fetch_from_servers = [&ps_worker] { ps_worker->fetch_server_state(); };
    checkpointer = make_checkpointer(o.checkpoint, *model, *optimizer, group, config, sampler.batches_per_epoch(),
                                     o.double_buffering, ps.has_value(), std::move(fetch_from_servers),
                                     ps ? ps_stop_agreement(*ps, ps_worker) : std::function<int(int)>{});
  }
  std::int64_t ps_start = 0;
  if (ps && checkpointer && o.checkpoint.resume) ps_start = checkpointer->resume();

  if (slowdown.active()) config["slowdown"] = slowdown_json(slowdown);
  std::unique_ptr<Updater> updater;
  DataParallelUpdater* data_parallel = nullptr;
  std::shared_ptr<Sequential> pipeline_stage_module;  // this rank's stage, for its checkpoints
  std::unique_ptr<Extension> pipeline_report;         // --profile: predicted beside measured
  if (pipe) {
    auto pu = std::make_unique<PipelineUpdater>(*chain, *optimizer, group.comm->transport(), *pipe);
    pipeline_stage = pu.get();
    updater = std::move(pu);
    // Each stage checkpoints its own part in DIR/stage-S (apps/dtrain/checkpoint_flags.h).
    const int s = pipeline_stage->stage();
    pipeline_stage_module = pipeline::make_stage(*chain, pipe->bounds[s], pipe->bounds[s + 1]);
    checkpointer =
        make_stage_checkpointer(o.checkpoint, *pipeline_stage_module, *optimizer, s, pipeline_stage->checkpoint_group(),
                                pipeline_stage->replica() == 0, config, sampler.batches_per_epoch(), group);
    if (!o.profile.empty())
      pipeline_report = make_pipeline_report(o.profile, *pipe, *chain, o.model, o.batch, workers, s, leader);
  } else if (ps) {
    // The servers' momentum correction continues from the rate of the step before the resumed one.
    if (ps_start > 0) optimizer->set_applied_lr(lr_at_iteration(*schedule, ps_start - 1, sampler.batches_per_epoch()));
    auto psu = std::make_unique<ps::PsUpdater>(*model, *optimizer, group.comm->transport(), *ps, ps_start > 0);
    ps_worker = psu.get();
    psu->set_accumulate(o.accumulate);
    if (o.checkpoint.resume) ps_start = psu->share_start_step(ps_start);
    updater = std::move(psu);
  } else if (group.active()) {
    auto dpu = std::make_unique<DataParallelUpdater>(*model, *optimizer, *group.worker, dp);
    data_parallel = dpu.get();
    if (dp.algorithm == comm::Algorithm::kAuto && dpu->algorithm() == comm::Algorithm::kShm) {
      if (leader) fmt::print("--allreduce auto: shm (every rank on one host, sharing memory)\n");
      config["allreduce_chosen"] = "shm";  // for dtrain explain (after the checkpointer took its copy)
    }
    updater = std::move(dpu);
  } else {
    if (o.accumulate != 1 || o.double_buffering) {
      throw InputError("--accumulate and --double-buffering need a data-parallel run (start dtrain under mpirun)");
    }
    updater = std::make_unique<StandardUpdater>(*model, *optimizer);
  }
  updater->set_label_smoothing(o.label_smoothing);
  updater = with_slowdown(std::move(updater), slowdown, group.rank);
  // After the data-parallel updater, whose start-up broadcast of rank 0's batch-norm statistics
  // would otherwise overwrite the other ranks' restored ones.
  std::int64_t start = ps ? ps_start : checkpointer && o.checkpoint.resume && !pipe ? checkpointer->resume() : 0;
  if (pipe && checkpointer && o.checkpoint.resume) {
    // Every stage resumes at the newest step all of them have (0: none, all start afresh).
    const std::int64_t newest = checkpointer->newest_step();
    std::int64_t common = 0;
    group.worker->run([&](comm::Communicator& c) { common = PipelineUpdater::common_step(newest, c); });
    start = checkpointer->resume(common);
  }
  TrainerOptions topt;
  topt.epochs = o.epochs;
  topt.start_iteration = start;
  topt.loader = train_loading;
  topt.world_size = workers;
  topt.sum_across_ranks = summer;
  Trainer trainer(*updater, *optimizer, *schedule, train, sampler, topt);
  bn_run.exact_sum = ps ? SumAcrossRanks{} : group.exact_summer();
  bn_run.loading = train_loading;
  std::unique_ptr<Extension> bn_stats = apply_batch_norm_flags(o.large_batch, *model, train, bn_run);
  if (pipeline_stage != nullptr) {
    // Every stage's trained part into every rank's whole model, before rank 0 evaluates it.
    trainer.add_extension(std::make_unique<PipelineGatherExtension>(
        *pipeline_stage, [&group](const std::function<void(comm::Communicator&)>& job) { group.worker->run(job); }));
  }
  if (bn_stats && (!ps || leader)) trainer.add_extension(std::move(bn_stats));
  if ((!ps && !pipe) || leader) {
    trainer.add_extension(std::make_unique<EvaluatorExtension>(*model, test, test_sampler, test_loading,
                                                               pipe ? SumAcrossRanks{} : summer));
  }
  if (checkpointer) trainer.add_extension(checkpointer->extension());
  // The other parameter-server workers stop with worker 0, whose checkpoint holds the servers' state.
  if (ps && !leader && !o.checkpoint.dir.empty()) {
    trainer.add_extension(std::make_unique<StopExtension>(ps_stop_agreement(*ps, ps_worker)));
  }
  if (leader && plan) trainer.add_extension(std::make_unique<perf::PredictionReport>(plan->prediction, true));
  if (pipeline_report) trainer.add_extension(std::move(pipeline_report));
  TraceRecorder* tracer = nullptr;
  if (!o.trace.empty()) {
    auto recorder = std::make_unique<TraceRecorder>(*model, group.rank, 1, o.trace_steps);
    tracer = recorder.get();
    tracer->install();
    if (data_parallel != nullptr) data_parallel->set_observer(tracer);
    if (pipeline_stage != nullptr) {
      pipeline_stage->set_trace([tracer](std::string name, std::string category, double from, double to) {
        tracer->schedule_span(std::move(name), std::move(category), from, to);
      });
    }
    if (ps_worker != nullptr) ps_worker->set_observer(tracer);
    trainer.add_extension(std::move(recorder));
  }
  LogReport* log = nullptr;
  if (leader && !o.log.empty()) {
    if (plan) config.update(plan->log_fields());  // after the checkpointer took its copy: predictions are not config
    if (core_round_trip) config["core_round_trip_ns"] = *core_round_trip * 1e9;
    auto report = std::make_unique<LogReport>(o.log, config);
    log = report.get();
    trainer.add_extension(std::move(report));
  }
  if (o.log_every > 0) trainer.add_extension(std::make_unique<StepLog>(log, o.log_every, summer));
  if (o.progress != "auto" && o.progress != "bar" && o.progress != "lines" && o.progress != "none") {
    throw InputError(fmt::format("--progress must be auto, bar, lines or none, got '{}'", o.progress));
  }
  // Under mpirun rank 0's stdout is often a pseudo-terminal even when mpirun's is a file.
  const bool bar = o.progress == "bar" || (o.progress == "auto" && isatty(STDOUT_FILENO) != 0 && !group.active());
  if (leader && o.progress != "none") trainer.add_extension(std::make_unique<ProgressReport>(bar));
  const TrainerState s = trainer.run();
  if (ps_worker != nullptr) ps_worker->finish();  // the servers stop once all workers are; worker 0 gets their stats
  if (ps_worker != nullptr && leader) {
    const nlohmann::json record =
        report_ps_run(*ps_worker, ps->workers, plan ? std::optional(plan->prediction.step) : std::nullopt);
    if (log != nullptr) log->write(record);
  }
  if (tracer != nullptr) {
    const nlohmann::json about =
        ps ? nlohmann::json{{"model", o.model}, {"workers", ps->workers}, {"servers", ps->servers}}
           : nlohmann::json{{"model", o.model}, {"ranks", group.size}};
    write_rank_traces(o.trace, *tracer, group.rank, ps ? gather_worker_strings(group, *ps) : group.string_gatherer(),
                      about);
    if (leader) fmt::print("trace: {}\n", o.trace);
  }
  if (leader && s.last_eval && s.stopped_by.empty()) {
    fmt::print("final test accuracy {:.4f} ({} of {} samples)\n", s.last_eval->accuracy, s.last_eval->correct,
               s.last_eval->samples);
  }
  if (leader && !o.log.empty()) fmt::print("metrics log: {}\n", o.log);
  return s.stopped_by.empty() ? 0 : kStoppedExitCode;
}

}  // namespace

Action register_train(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* t = app.add_subcommand("train", "Train a model; with no flags: LeNet on Fashion-MNIST for 3 epochs");
  t->add_option("--model", o->model, fmt::format("Model: {}", fmt::join(model_names(), ", ")))->capture_default_str();
  t->add_option("--dataset", o->dataset, fmt::format("Dataset: {}", fmt::join(dataset_names(), ", ")))
      ->capture_default_str();
  t->add_option("--data", o->data_dir,
                "Directory holding the dataset files (default: /usr/share/datasets/fashion-mnist for fashion-mnist, "
                "from Debian's dataset-fashion-mnist package)");
  t->add_option("--epochs", o->epochs, "Passes over the training set")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--batch", o->batch, "Samples per step")->capture_default_str()->check(CLI::PositiveNumber);
  t->add_option("--eval-batch", o->eval_batch, "Samples per evaluation step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--limit", o->limit, "Train on the first N samples only (0: all)")->capture_default_str();
  t->add_option("--eval-limit", o->eval_limit, "Evaluate on the first N test samples only (0: all)")
      ->capture_default_str();
  t->add_option("--log-every", o->log_every,
                "Also log the loss (averaged over ranks), rank 0's phase times and the time since the start every N "
                "steps as \"step\" records (0: epochs only)")
      ->capture_default_str();
  t->add_option("--progress", o->progress,
                "auto (a bar on a terminal, lines otherwise; lines under mpirun), bar, lines, or none")
      ->capture_default_str();
  t->add_option("--optimizer", o->optimizer.name, fmt::format("Optimizer: {}", fmt::join(optimizer_names(), ", ")))
      ->capture_default_str();
  t->add_option("--lr", o->optimizer.lr, "Learning rate (base of the schedule)")->capture_default_str();
  CLI::Option* momentum =
      t->add_option("--momentum", o->optimizer.momentum,
                    "Momentum of sgd: v = mu*v - lr*g; w += v (with --double-buffering the default becomes 2 mu - 1 "
                    "= 0.8: one step of staleness adds momentum of its own)")
          ->capture_default_str();
  t->add_flag("--nesterov", o->optimizer.nesterov, "Nesterov momentum (sgd)");
  t->add_flag("--no-momentum-correction{false}", o->optimizer.momentum_correction,
              "sgd: keep the velocity as it is when the rate changes (by default it is rescaled by lr_t / "
              "lr_{t-1}, Goyal et al. 2017, so the step equals PyTorch's under any schedule)");
  t->add_option("--weight-decay", o->optimizer.weight_decay, "L2 penalty added to every gradient")
      ->capture_default_str();
  t->add_option("--label-smoothing", o->label_smoothing,
                "Train against (1 - s) onehot + s / classes (Szegedy et al. 2016); evaluation's loss stays plain")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999));
  t->add_option("--trust-coefficient", o->optimizer.trust_coefficient,
                "lars: eta of the trust ratio eta*||w|| / (||g|| + wd*||w||) (You et al. 2017)")
      ->capture_default_str();
  t->add_flag("--adapt-all", o->optimizer.adapt_all,
              "lars, lamb: adapt and decay biases and batch-norm parameters too (excluded by default)");
  t->add_option("--schedule", o->schedule.name,
                fmt::format("Learning-rate schedule: {}", fmt::join(schedule_names(), ", ")))
      ->capture_default_str();
  t->add_option("--step-epochs", o->schedule.step_epochs, "step schedule: epochs between decays")
      ->capture_default_str();
  t->add_option("--gamma", o->schedule.gamma, "step schedule: factor per decay")->capture_default_str();
  t->add_option("--warmup-epochs", o->schedule.warmup_epochs,
                "Linear warmup from --warmup-start x the learning rate over this many epochs (per step, Goyal et al.)")
      ->capture_default_str();
  t->add_option("--augment", o->augment,
                "Training augmentation, comma separated: flip, translate:PIXELS, rotate:DEGREES, noise:SIGMA "
                "(e.g. flip,translate:4)");
  t->add_option("--threads", o->threads,
                "Compute threads per rank (0: this process's CPUs, shared among the ranks on its host unless mpirun "
                "bound it to its own)")
      ->capture_default_str();
  t->add_option(
       "--precision", o->precision,
       "Convolutions and linear layers in f32 or bf16 (bf16 inputs and weights on the CPU's bf16 dot products, "
       "f32 sums and master weights; convolutions, batch norms and ReLUs keep their outputs in bf16)")
      ->capture_default_str();
  t->add_option("--prefetch", o->prefetch, "Batches the loader prepares ahead on its own thread (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  t->add_option("--seed", o->seed, "Seed of initialisation, shuffling and augmentation (runs are deterministic)")
      ->capture_default_str();
  t->add_option("--log", o->log, "JSONL metrics log ('' for none); written by rank 0")->capture_default_str();
  t->add_option("--allreduce", o->allreduce,
                "Under mpirun: gradient allreduce algorithm: ring, tree, butterfly, onetoall, mpi (MPI_Allreduce), "
                "shm (ranks of one host reducing in shared memory), auto")
      ->capture_default_str();
  t->add_option("--comm-dtype", o->comm_dtype,
                "Under mpirun: gradients on the wire as f32, f16 or bf16 (allreduce, and --mode ps pushes)")
      ->capture_default_str();
  t->add_option("--bucket-mb", o->bucket_mb_arg,
                "Under mpirun: gradient bucket size in MiB; each bucket is allreduced as soon as its gradients are "
                "final (0: one bucket per parameter; auto: the size the model predicts fastest, needs --profile)")
      ->capture_default_str();
  t->add_flag("--double-buffering", o->double_buffering,
              "Under mpirun: update with the previous step's allreduced gradients, so communication overlaps a "
              "whole step (one step stale)");
  t->add_option("--accumulate", o->accumulate,
                "Under mpirun: split each rank's batch into K micro-batches, one allreduce per step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--profile", o->profile,
                "Hardware profile (dtrain calibrate's JSON, or built-in names joined by '+'): print predicted beside "
                "measured time per step at each epoch's end, log both, and resolve --allreduce/--bucket-mb auto by "
                "the model");
  t->add_option("--trace", o->trace,
                "Write a Chrome trace (chrome://tracing, Perfetto) of --trace-steps steps: layers' forward and "
                "backward, each bucket's allreduce (--mode ps: each shard's push and the pull), the update, per "
                "rank");
  t->add_option("--trace-steps", o->trace_steps, "Steps the trace records, from the second step on")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--timeout", o->timeout,
                "Under mpirun: seconds a collective may wait for a peer before failing with an error naming it (0: "
                "forever)")
      ->capture_default_str();
  add_chunk_flag(*t, o->chunk_kb);
  add_checkpoint_flags(*t, o->checkpoint);
  add_slowdown_flags(*t, o->slowdown);
  add_ps_flags(*t, o->ps);
  add_pipeline_flags(*t, o->pipeline);
  add_large_batch_flags(*t, o->large_batch, o->optimizer);
  return [t, o, momentum]() {
    if (!t->parsed()) return -1;
    o->momentum_given = momentum->count() > 0;
    return run_train(*o);
  };
}

}  // namespace dtrain::cli
