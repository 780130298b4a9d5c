// The order of a worker's messages within a clock: each shard's request for the next clock's
// weights leaves with its push, before the shards pushed after it, so a server answers while the
// worker still computes the other shards' gradients.
#include "ps/ps_worker.h"

#include <gtest/gtest.h>

#include <mutex>
#include <utility>
#include <vector>

#include "ps/ps_test_util.h"

namespace dtrain::ps {
namespace {

// Forwards to the local transport and records (peer, tag) of every message sent.
class RecordingTransport final : public comm::Transport {
 public:
  explicit RecordingTransport(comm::Transport& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string_view name() const override { return inner_.name(); }
  comm::Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    sent.emplace_back(peer, tag);
    return inner_.isend(data, bytes, peer, tag);
  }
  comm::Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    return inner_.irecv(data, bytes, peer, tag);
  }
  void waitall(std::span<comm::Request> requests, const comm::Deadline& deadline, std::string_view what) override {
    inner_.waitall(requests, deadline, what);
  }
  bool test(comm::Request& request, std::string_view what) override { return inner_.test(request, what); }
  void cancel(std::span<comm::Request> requests) noexcept override { inner_.cancel(requests); }
  void throw_if_aborted() const override { inner_.throw_if_aborted(); }

  std::vector<std::pair<int, int>> sent;

 private:
  comm::Transport& inner_;
};

TEST(PsWorker, EachShardsNextWeightsAreRequestedWithItsPush) {
  for (SyncMode mode : {SyncMode::kBsp, SyncMode::kAsp}) {
    const PsConfig config = testing::test_config(1, 2, mode);
    std::vector<std::pair<int, int>> sent;
    std::vector<float> pulled;
    testing::run_ps(config, testing::plain_sgd(1), testing::split_total(), [&](comm::Transport& inner) {
      RecordingTransport t(inner);
      const auto& sizes = testing::split_sizes();
      std::vector<std::vector<float>> params, grads;
      std::vector<float*> p;
      std::vector<const float*> g;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        params.emplace_back(static_cast<std::size_t>(sizes[i]));
        grads.emplace_back(static_cast<std::size_t>(sizes[i]), 1.0f);
        for (std::size_t e = 0; e < params[i].size(); ++e) params[i][e] = static_cast<float>(100 * i + e);
      }
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        p.push_back(params[i].data());
        g.push_back(grads[i].data());
      }
      PsWorker worker(t, config, sizes);
      worker.start(p);
      t.sent.clear();
      worker.push(1, g, 1);  // backward finishes the last layers' shard first
      worker.push(0, g, 1);
      worker.pull_next(p);
      sent = t.sent;
      for (const auto& v : params) pulled.insert(pulled.end(), v.begin(), v.end());
      worker.finish();
    });
    const int server0 = config.server_rank(0), server1 = config.server_rank(1);
    const std::vector<std::pair<int, int>> expected{
        {server1, kTagPush}, {server1, kTagRequest}, {server0, kTagPush}, {server0, kTagRequest}};
    EXPECT_EQ(sent, expected) << sync_mode_name(mode);
    std::vector<float> moved = testing::constant_push_result(1, 0);
    for (float& v : moved) v -= 1;
    EXPECT_EQ(pulled, moved) << sync_mode_name(mode) << ": the weights after one step of gradient 1 at lr 1";
  }
}

}  // namespace
}  // namespace dtrain::ps
