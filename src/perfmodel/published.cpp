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
    return std::vector<PublishedRun>{
        {"he2016", "He et al. 2016, ResNet-50 on 8 P100 in one server, batch 256 (timed by Goyal et al. 2017)",
         "resnet50", "imagenet", "8xp100-nvlink", he, 90, 29.0, 0.25},
        {"goyal2017", "Goyal et al. 2017, 256 P100 in 32 servers of 8, 50 Gbit Ethernet, batch 8192", "resnet50",
         "imagenet", "8xp100-nvlink+eth-50g", goyal, 90, 1.0, 0.25},
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
    c.prediction =
        predict_run(it->second, dataset_info(run.dataset), load_profile(run.profile), run.config, run.epochs);
    c.predicted_hours = c.prediction.total_seconds / 3600;
    c.error = (c.predicted_hours - run.published_hours) / run.published_hours;
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
        "data {}), {} steps per epoch\n  predicted {:.2f} h, published {:.1f} h, error {:+.1f}% (accepted: {:.0f}%)\n",
        c.run.citation, c.run.profile, c.run.config.workers, c.run.config.batch_per_worker,
        exchange_label(c.run.config), format_seconds(s.step), format_seconds(s.compute), format_seconds(s.comm),
        format_seconds(s.exposed_comm()), format_seconds(s.straggler), format_seconds(s.data),
        c.prediction.steps_per_epoch, c.predicted_hours, c.run.published_hours, 100 * c.error, 100 * c.run.tolerance);
  }
  return out;
}

}  // namespace dtrain::perf
