// `dtrain train`: train a model on a dataset, evaluate after each epoch, log metrics.
#include <unistd.h>

#include <fmt/format.h>

#include <thread>

#include "apps/dtrain/commands.h"
#include "core/threads.h"
#include "data/augment.h"
#include "data/dataset.h"
#include "nn/models/models.h"
#include "nn/summary.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/extensions.h"
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
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  std::string augment;
  int threads = 0;
  int prefetch = 2;
  std::uint64_t seed = 0;
  std::string log = "dtrain-log.jsonl";
};

nlohmann::json config_record(const TrainOptions& o, const Dataset& train, std::int64_t params) {
  return {{"model", o.model},
          {"dataset", o.dataset},
          {"train_samples", train.size()},
          {"parameters", params},
          {"epochs", o.epochs},
          {"batch", o.batch},
          {"optimizer", o.optimizer.name},
          {"lr", o.optimizer.lr},
          {"momentum", o.optimizer.momentum},
          {"nesterov", o.optimizer.nesterov},
          {"weight_decay", o.optimizer.weight_decay},
          {"schedule", o.schedule.name},
          {"warmup_epochs", o.schedule.warmup_epochs},
          {"augment", o.augment},
          {"threads", o.threads},
          {"seed", o.seed},
          {"world_size", 1}};
}

int run_train(TrainOptions o) {
  if (o.threads == 0) o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_num_threads(o.threads);
  // Check every name before the (slower) dataset load, so a typo fails at once.
  (void)make_optimizer(o.optimizer, {});
  o.schedule.base_lr = o.optimizer.lr;
  o.schedule.total_epochs = static_cast<double>(o.epochs);
  auto schedule = make_schedule(o.schedule);
  const AugmentConfig augment = parse_augment(o.augment);
  Dataset train = load_dataset(o.dataset, o.data_dir, "train");
  const Dataset test = load_dataset(o.dataset, o.data_dir, "test");
  if (o.limit > 0 && o.limit < train.size()) train = subset(train, 0, o.limit);

  Rng rng(o.seed);
  const ModelInput input{train.channels, train.height, train.width, train.num_classes};
  auto model = make_model(o.model, input, rng);
  auto optimizer = make_optimizer(o.optimizer, model->parameters());

  const Sampler sampler(train.size(), SamplerConfig::train(o.batch, o.seed));
  const Sampler test_sampler(test.size(), SamplerConfig::eval(o.eval_batch));
  LoaderOptions train_loading;
  train_loading.prefetch = o.prefetch;
  train_loading.augment = augment;
  train_loading.seed = o.seed;
  LoaderOptions test_loading;
  test_loading.prefetch = o.prefetch;

  const ModelCost cost = total_cost(summarize(*model, Shape{input.channels, input.height, input.width}));
  fmt::print("dtrain: {} ({} parameters, {:.1f} MFLOP per sample forward) on {}, {} epochs of {} steps, batch {}, "
             "{} thread(s)\n",
             o.model, model->num_parameters(), cost.forward_flops / 1e6, train.describe(), o.epochs,
             sampler.batches_per_epoch(), o.batch, o.threads);

  StandardUpdater updater(*model, *optimizer);
  TrainerOptions topt;
  topt.epochs = o.epochs;
  topt.loader = train_loading;
  Trainer trainer(updater, *optimizer, *schedule, train, sampler, topt);
  trainer.add_extension(std::make_unique<EvaluatorExtension>(*model, test, test_sampler, test_loading));
  if (!o.log.empty()) trainer.add_extension(std::make_unique<LogReport>(o.log, config_record(o, train, model->num_parameters())));
  trainer.add_extension(std::make_unique<ProgressReport>(isatty(STDOUT_FILENO) != 0));
  const TrainerState s = trainer.run();
  if (s.last_eval) {
    fmt::print("final test accuracy {:.4f} ({} of {} samples)\n", s.last_eval->accuracy, s.last_eval->correct,
               s.last_eval->samples);
  }
  if (!o.log.empty()) fmt::print("metrics log: {}\n", o.log);
  return 0;
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
  t->add_option("--epochs", o->epochs, "Passes over the training set")->capture_default_str()->check(CLI::PositiveNumber);
  t->add_option("--batch", o->batch, "Samples per step")->capture_default_str()->check(CLI::PositiveNumber);
  t->add_option("--eval-batch", o->eval_batch, "Samples per evaluation step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  t->add_option("--limit", o->limit, "Train on the first N samples only (0: all)")->capture_default_str();
  t->add_option("--optimizer", o->optimizer.name, fmt::format("Optimizer: {}", fmt::join(optimizer_names(), ", ")))
      ->capture_default_str();
  t->add_option("--lr", o->optimizer.lr, "Learning rate (base of the schedule)")->capture_default_str();
  t->add_option("--momentum", o->optimizer.momentum, "Momentum of sgd: v = mu*v - lr*g; w += v")->capture_default_str();
  t->add_flag("--nesterov", o->optimizer.nesterov, "Nesterov momentum (sgd)");
  t->add_option("--weight-decay", o->optimizer.weight_decay, "L2 penalty added to every gradient")
      ->capture_default_str();
  t->add_option("--schedule", o->schedule.name, fmt::format("Learning-rate schedule: {}", fmt::join(schedule_names(), ", ")))
      ->capture_default_str();
  t->add_option("--step-epochs", o->schedule.step_epochs, "step schedule: epochs between decays")->capture_default_str();
  t->add_option("--gamma", o->schedule.gamma, "step schedule: factor per decay")->capture_default_str();
  t->add_option("--warmup-epochs", o->schedule.warmup_epochs,
                "Linear warmup from 0.1x the learning rate over this many epochs (per step, Goyal et al.)")
      ->capture_default_str();
  t->add_option("--augment", o->augment,
                "Training augmentation, comma separated: flip, translate:PIXELS, rotate:DEGREES, noise:SIGMA "
                "(e.g. flip,translate:4)");
  t->add_option("--threads", o->threads, "Compute threads (0: one per core)")->capture_default_str();
  t->add_option("--prefetch", o->prefetch, "Batches the loader prepares ahead on its own thread (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  t->add_option("--seed", o->seed, "Seed of initialisation, shuffling and augmentation (runs are deterministic)")
      ->capture_default_str();
  t->add_option("--log", o->log, "JSONL metrics log ('' for none)")->capture_default_str();
  return [t, o]() { return t->parsed() ? run_train(*o) : -1; };
}

}  // namespace dtrain::cli
