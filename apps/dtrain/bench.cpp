// `dtrain bench`: throughput benchmarks whose output the comparison scripts read.
#include <fmt/format.h>

#include "apps/dtrain/commands.h"
#include "apps/dtrain/distributed.h"
#include "apps/dtrain/pipeline_flags.h"
#include "apps/dtrain/process_stats.h"
#include "apps/dtrain/sgemm_ceiling.h"
#include "autograd/ops.h"
#include "core/threads.h"
#include "core/timer.h"
#include "nn/models/models.h"
#include "nn/summary.h"
#include "optim/optimizer.h"
#include "parallel/data_parallel.h"
#include "tensor/allocator.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/gemm.h"
#include "tensorparallel/parallelize.h"

namespace dtrain::cli {
namespace {

struct BenchTrainOptions {
  std::string model = "lenet";
  std::int64_t batch = 64;
  int threads = 1;
  int steps = 50;
  int warmup = 3;
  std::uint64_t seed = 0;
  // Under mpirun: data-parallel steps with these settings.
  std::string allreduce = "auto";
  std::string comm_dtype = "f32";
  double bucket_mb = 1.0;
  bool double_buffering = false;
  bool private_weights = false;
  std::string chunk_kb = "auto";
  std::string gemm = "onednn";
  int probe_every = 0;            // steps between samples of the core round trip (0: at the start and end only)
  PipelineFlags pipeline;         // under mpirun: --pipeline K stages (P/K replicas) instead of data parallelism
  int tensor_parallel = 1;        // under mpirun -np T: the model's layers split over the T ranks instead
  std::string precision = "f32";  // the matrix layers' arithmetic (tensor/kernels/cpu/compute_precision.h)
};

// --tensor-parallel T: every rank builds the same whole model and batch (one seed) and runs its
// part of each split layer (tensorparallel/parallelize.h).
void check_tensor_parallel(const BenchTrainOptions& o, const ProcessGroup& group, const Module& model) {
  if (o.tensor_parallel < 1)
    throw InputError(fmt::format("--tensor-parallel must be at least 1, got {}", o.tensor_parallel));
  if (o.pipeline.stages != 1)
    throw InputError("--tensor-parallel does not combine with --pipeline in dtrain bench yet: drop one of them");
  if (group.size != o.tensor_parallel) {
    throw InputError(
        fmt::format("--tensor-parallel {} splits each layer over {} ranks, but this run has {}: start "
                    "mpirun -np {}",
                    o.tensor_parallel, o.tensor_parallel, group.size, o.tensor_parallel));
  }
  if (dynamic_cast<const Sequential*>(&model) == nullptr) {
    throw InputError(
        fmt::format("--tensor-parallel splits a chain of layers; this model ({}) is not one", model.type()));
  }
}

std::vector<double> scaled(std::vector<double> v, double factor) {
  for (double& x : v) x *= factor;
  return v;
}

int bench_train(const BenchTrainOptions& o) {
  set_num_threads(o.threads);
  if (o.gemm != "onednn" && o.gemm != "openblas") {
    throw InputError(fmt::format("--gemm must be onednn or openblas, got '{}'", o.gemm));
  }
  set_gemm_library(o.gemm == "openblas" ? GemmLibrary::kOpenBlas : GemmLibrary::kOneDnn);
  set_compute_precision(parse_compute_precision(o.precision));
  const bool cifar = o.model.rfind("resnet", 0) == 0;
  // Same inputs as the PyTorch peer (shared/peers/torch_train.py): resnets see 3x32x32 images.
  const ModelInput in = cifar ? ModelInput{3, 32, 32, 10} : ModelInput{1, 28, 28, 10};
  Rng rng(o.seed);
  auto model = make_model(o.model, in, rng);
  const ModelCost cost = total_cost(summarize(*model, Shape{in.channels, in.height, in.width}));
  OptimizerConfig oc;
  auto opt = make_optimizer(oc, model->parameters());

  std::vector<float> xv(static_cast<std::size_t>(o.batch * in.channels * in.height * in.width));
  for (float& v : xv) v = static_cast<float>(rng.uniform(0, 1));
  std::vector<std::int32_t> yv(static_cast<std::size_t>(o.batch));
  for (auto& v : yv) v = static_cast<std::int32_t>(rng.next() % 10);
  const Tensor x = Tensor::from_vector(xv, {o.batch, in.channels, in.height, in.width});
  const Tensor y = Tensor::from_labels(yv);

  // Under mpirun every rank runs data-parallel steps on its own batch of o.batch samples.
  ProcessGroup group = join_process_group(300, o.chunk_kb);
  std::unique_ptr<Updater> updater;
  bool shared_weights = false;
  int replicas = group.size;  // the data-parallel workers, each with its own batch of o.batch
  std::unique_ptr<Optimizer> stage_opt;
  const Shape sample{in.channels, in.height, in.width};
  std::shared_ptr<Sequential> tensor_parallel_model;
  if (o.tensor_parallel != 1) {
    check_tensor_parallel(o, group, *model);
    tensor_parallel_model = tensorparallel::parallelize(dynamic_cast<const Sequential&>(*model), *group.comm);
    stage_opt = make_optimizer(oc, tensor_parallel_model->parameters());
    updater = std::make_unique<StandardUpdater>(*tensor_parallel_model, *stage_opt);
    replicas = 1;
  } else if (const auto pipe =
                 pipeline_setup(o.pipeline, group, *model, sample, 300,
                                {false, 1, false, false, "running", comm::parse_algorithm(o.allreduce),
                                 parse_dtype(o.comm_dtype), static_cast<std::size_t>(o.bucket_mb * (1 << 20))})) {
    // One stage per rank: its optimizer over its own parameters (parallel/pipeline_updater.h).
    auto& chain = dynamic_cast<Sequential&>(*model);
    stage_opt = make_optimizer(oc, PipelineUpdater::stage_parameters(chain, pipe->bounds, group.rank % pipe->stages()));
    updater = std::make_unique<PipelineUpdater>(chain, *stage_opt, group.comm->transport(), *pipe);
    replicas = group.size / pipe->stages();
  } else if (group.active()) {
    DataParallelConfig dp;
    dp.algorithm = comm::parse_algorithm(o.allreduce);
    dp.comm_dtype = parse_dtype(o.comm_dtype);
    dp.bucket_bytes = static_cast<std::size_t>(o.bucket_mb * (1 << 20));
    dp.double_buffering = o.double_buffering;
    dp.shared_weights = !o.private_weights;
    auto dpu = std::make_unique<DataParallelUpdater>(*model, *opt, *group.worker, dp);
    shared_weights = dpu->shares_weights();
    updater = std::move(dpu);
  } else {
    updater = std::make_unique<StandardUpdater>(*model, *opt);
  }
  const Batch batch{x, y, {}};
  std::int64_t iteration = 0;
  PhaseTimes phases;
  for (int i = 0; i < o.warmup; ++i) updater->update(batch, iteration++);
  // The cache-line round trip (the machine state same-host transfers depend on) at the start, the
  // end and every --probe-every steps: the probe needs both CPUs, so the ranks stop for it (every
  // rank counts the same steps) and the pause is left out of the time.
  std::vector<double> core_rt;
  const auto probe = [&] {  // seconds, 0 where the two CPUs never ran at once
    const std::optional<double> rt = group.core_round_trip();
    if (rt) core_rt.push_back(*rt);
    return rt.value_or(0);
  };
  const double core_rt_start = probe();
  const ProcessStats before = process_stats();
  double seconds = 0;
  for (int done = 0; done < o.steps;) {
    const Stopwatch sw;
    const int segment = o.probe_every > 0 ? std::min(o.probe_every, o.steps - done) : o.steps;
    for (int i = 0; i < segment; ++i) phases += updater->update(batch, iteration++).times;
    done += segment;
    if (done == o.steps) {
      updater->flush();
      if (group.active()) group.worker->run([](comm::Communicator& c) { c.barrier(); });
    }
    seconds += sw.seconds();
    if (done < o.steps) (void)probe();
  }
  const double core_rt_end = probe();
  const ProcessStats after = process_stats();
  const AllocatorStats memory = cpu_allocator_stats();  // tensors: peak in use, and freed blocks kept for reuse
  // The ceiling the achieved rate is a fraction of, measured after the run's own statistics (its
  // matrices stay out of peak_rss_mb) by every rank at once, as the ranks computed.
  const double ceiling = sgemm_ceiling_gflops();
  // Every rank's peak RSS (a pipeline's stages differ), on rank 0.
  std::vector<double> rss(static_cast<std::size_t>(group.size), after.peak_rss_mb);
  if (group.active())
    group.worker->run([&](comm::Communicator& c) { c.allgather(&after.peak_rss_mb, rss.data(), sizeof(double)); });
  if (group.rank != 0) return 0;

  const double samples_per_s = static_cast<double>(o.steps * o.batch * replicas) / seconds;
  const double gflops = samples_per_s * (cost.forward_flops + cost.backward_flops) / 1e9;
  fmt::print(
      "dtrain model={} batch={} threads={} steps={} samples_per_s={:.1f} step_ms={:.3f} gflops={:.1f} "
      "peak_fraction={:.3f} sgemm_gflops={:.1f} train_mflop_per_sample={:.1f} peak_rss_mb={:.1f} "
      "minor_faults_per_step={:.1f} "
      "blas={} gemm={} ranks={} forward_ms={:.3f} backward_ms={:.3f} comm_ms={:.3f} update_ms={:.3f} "
      "tensor_peak_mb={:.1f} tensor_cached_mb={:.1f} chunk_kb={} core_rt_ns={:.0f},{:.0f} core_rt_samples_ns={} "
      "shared_weights={} peak_rss_mb_ranks={:.1f} pipeline={} micro_batches={} tensor_parallel={} precision={}\n",
      o.model, o.batch, o.threads, o.steps, samples_per_s, 1e3 * seconds / o.steps, gflops / group.size,
      gflops / group.size / ceiling, ceiling, (cost.forward_flops + cost.backward_flops) / 1e6, after.peak_rss_mb,
      static_cast<double>(after.minor_faults - before.minor_faults) / o.steps, openblas_build(), o.gemm, group.size,
      1e3 * phases.forward / o.steps, 1e3 * phases.backward / o.steps, 1e3 * phases.comm / o.steps,
      1e3 * phases.update / o.steps, static_cast<double>(memory.peak_bytes_in_use) / (1 << 20),
      static_cast<double>(memory.bytes_cached) / (1 << 20),
      group.active() ? group.comm->options().chunk_bytes >> 10 : 0, core_rt_start * 1e9, core_rt_end * 1e9,
      core_rt.empty() ? "-" : fmt::format("{:.0f}", fmt::join(scaled(core_rt, 1e9), ",")), shared_weights,
      fmt::join(rss, ","), o.pipeline.stages, o.pipeline.micro_batches, o.tensor_parallel, o.precision);
  return 0;
}

}  // namespace

Action register_bench(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Measure throughput (prints one key=value line per run)");
  bench->require_subcommand(1);
  auto o = std::make_shared<BenchTrainOptions>();
  CLI::App* train = bench->add_subcommand(
      "train",
      "Training steps per second of one model on synthetic data (under mpirun: data-parallel, per-rank batch)");
  train->add_option("--model", o->model, "Model: " + fmt::format("{}", fmt::join(model_names(), ", ")))
      ->capture_default_str();
  train->add_option("--batch", o->batch, "Samples per step")->capture_default_str()->check(CLI::PositiveNumber);
  train->add_option("--threads", o->threads, "Compute threads (OpenMP: oneDNN and OpenBLAS)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  train->add_option("--steps", o->steps, "Timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  train->add_option("--warmup", o->warmup, "Untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  train->add_option("--seed", o->seed, "Seed of parameters and data")->capture_default_str();
  train
      ->add_option("--allreduce", o->allreduce,
                   "Under mpirun: allreduce algorithm (ring, tree, butterfly, onetoall, mpi, shm, auto)")
      ->capture_default_str();
  train->add_option("--comm-dtype", o->comm_dtype, "Under mpirun: f32, f16 or bf16 gradients on the wire")
      ->capture_default_str();
  train->add_option("--bucket-mb", o->bucket_mb, "Under mpirun: gradient bucket size in MiB")->capture_default_str();
  train->add_flag("--double-buffering", o->double_buffering, "Under mpirun: one-step-stale gradients");
  train->add_flag("--private-weights", o->private_weights,
                  "Under mpirun with shm: every rank keeps its own weights and makes the whole update (by "
                  "default the ranks share one copy and each updates its part)");
  add_chunk_flag(*train, o->chunk_kb);
  add_pipeline_flags(*train, o->pipeline);
  train
      ->add_option("--tensor-parallel", o->tensor_parallel,
                   "Under mpirun -np T: split the model's linear layers and convolutions over the T ranks "
                   "(tensorparallel/plan.h), every rank on the same batch")
      ->capture_default_str();
  train
      ->add_option("--probe-every", o->probe_every,
                   "Also sample the cache-line round trip between two cores every N steps, pausing the ranks "
                   "(left out of the time): the machine state through the run (0: at the start and end only)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  train
      ->add_option("--gemm", o->gemm,
                   "Library of the linear layers' sgemm: onednn (AVX-512 here) or openblas (follows "
                   "OPENBLAS_CORETYPE, which this environment sets to Haswell: AVX2)")
      ->capture_default_str();
  train
      ->add_option("--precision", o->precision,
                   "Convolutions and linear layers in f32 or bf16 (bf16 inputs and weights on the CPU's bf16 dot "
                   "products, f32 sums and master weights; convolutions, batch norms and ReLUs keep their outputs "
                   "in bf16)")
      ->capture_default_str();
  Action allreduce = register_bench_allreduce(*bench);
  Action cores = register_bench_cores(*bench);
  return [train, o, allreduce, cores]() {
    if (train->parsed()) return bench_train(*o);
    const int rc = allreduce();
    return rc != -1 ? rc : cores();
  };
}

}  // namespace dtrain::cli
