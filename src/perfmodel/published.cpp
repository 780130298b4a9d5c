#include "perfmodel/published.h"

#include <fmt/format.h>

#include <map>

#include "perfmodel/report.h"

namespace dtrain::perf {

const std::vector<PublishedRun>& published_runs() {
  static const std::vector<PublishedRun> runs = [] {
    RunConfig he;
    he.workers = 8;
    he.batch_per_worker = 32;
    he.algorithm = comm::Algorithm::kRing;  // NCCL's ring inside the server
    RunConfig goyal = he;
    goyal.workers = 256;
    goyal.algorithm = comm::Algorithm::kButterfly;  // recursive halving and doubling across servers
    goyal.hierarchical = true;
    RunConfig one;  // one GPU, batch 256
    one.workers = 1;
    one.batch_per_worker = 256;
    RunConfig eight = one;  // one server of 8, NCCL's ring
    eight.workers = 8;
    eight.algorithm = comm::Algorithm::kRing;
    const auto amp = [](std::string name, std::string citation, std::string profile, const RunConfig& c,
                        double samples_per_s) {
      PublishedRun r{std::move(name), std::move(citation), "resnet50", "imagenet", std::move(profile), c, 90, 0, 0.25};
      r.published_samples_per_s = samples_per_s;
      r.precision = "f16";
      return r;
    };
    const std::string dle = "NVIDIA DeepLearningExamples ResNet-50 v1.5 (PyTorch 21.03), AMP, batch 256 per GPU, ";
    return std::vector<PublishedRun>{
        {"he2016", "He et al. 2016, ResNet-50 on 8 P100 in one server, batch 256 (timed by Goyal et al. 2017)",
         "resnet50", "imagenet", "8xp100-nvlink", he, 90, 29.0, 0.25},
        {"goyal2017", "Goyal et al. 2017, 256 P100 in 32 servers of 8, 50 Gbit Ethernet, batch 8192", "resnet50",
         "imagenet", "8xp100-nvlink+eth-50g", goyal, 90, 1.0, 0.25},
        amp("dle-v100-amp", dle + "1 V100 16 GB (DGX-1V)", "v100", one, 1200),
        amp("dle-8v100-amp", dle + "8 V100 16 GB (DGX-1V)", "8xv100-nvlink", eight, 8322),
        amp("dle-a100-amp", dle + "1 A100 80 GB (DGX A100)", "a100", one, 2470),
        amp("dle-8a100-amp", dle + "8 A100 80 GB (DGX A100)", "8xa100-nvlink3", eight, 16621),
    };
  }();
  return runs;
}

std::vector<PublishedCheck> check_published_runs() {
  std::map<std::string, Workload> workloads;
  std::vector<PublishedCheck> out;
  for (const PublishedRun& run : published_runs()) {
    const std::string key = run.model + "/" + run.dataset;
    auto it = workloads.find(key);
    if (it == workloads.end()) it = workloads.emplace(key, describe_zoo_model(run.model, run.dataset)).first;
    PublishedCheck c;
    c.run = run;
    Profile profile = load_profile(run.profile);
    profile.device = at_precision(profile.device, profile.name, run.precision);
    c.prediction = predict_run(it->second, dataset_info(run.dataset), profile, run.config, run.epochs);
    c.predicted_hours = c.prediction.total_seconds / 3600;
    c.predicted_samples_per_s =
        static_cast<double>(run.config.workers * run.config.batch_per_worker) / c.prediction.step.step;
    c.error = run.published_samples_per_s > 0
                  ? (c.predicted_samples_per_s - run.published_samples_per_s) / run.published_samples_per_s
                  : (c.predicted_hours - run.published_hours) / run.published_hours;
    out.push_back(std::move(c));
  }
  return out;
}

std::string format_published(const std::vector<PublishedCheck>& checks) {
  std::string out;
  for (const PublishedCheck& c : checks) {
    const StepPrediction& s = c.prediction.step;
    out += fmt::format(
        "{}\n  profile {}, {} x batch {}, {}: step {} (compute {}, comm {} of which {} exposed, straggler wait {}, "
        "data {}), {} steps per epoch\n  {}, error {:+.1f}% (accepted: {:.0f}%)\n",
        c.run.citation, c.run.profile + (c.run.precision != "f32" ? " in " + c.run.precision : ""),
        c.run.config.workers, c.run.config.batch_per_worker, exchange_label(c.run.config), format_seconds(s.step),
        format_seconds(s.compute), format_seconds(s.comm), format_seconds(s.exposed_comm()),
        format_seconds(s.straggler), format_seconds(s.data), c.prediction.steps_per_epoch,
        c.run.published_samples_per_s > 0
            ? fmt::format("predicted {:.0f} images/s, published {:.0f}", c.predicted_samples_per_s,
                          c.run.published_samples_per_s)
            : fmt::format("predicted {:.2f} h, published {:.1f} h", c.predicted_hours, c.run.published_hours),
        100 * c.error, 100 * c.run.tolerance);
  }
  return out;
}

}  // namespace dtrain::perf
