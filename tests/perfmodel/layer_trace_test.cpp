// The layer list the model costs holds every op a forward runs: the leaf modules and the ops a
// composite module runs itself (ResNet's basic block: a ReLU after its first batch norm, the
// shortcut addition and a ReLU).
#include "perfmodel/layer_trace.h"

#include <gtest/gtest.h>

#include <map>

#include "nn/models/models.h"

namespace dtrain::perf {
namespace {

// Ops recorded by one forward with gradients on, by name (views left out as the trace does).
class OpCounter : public OpObserver {
 public:
  void op(const std::string& name, const std::vector<Variable>&, const Variable&) override {
    if (name != "reshape") ++count[name];
  }
  std::map<std::string, int> count;
};

TEST(LayerTrace, ResNetBlocksContributeTheirReluAndAddition) {
  Rng rng(0);
  auto model = make_model("resnet20", ModelInput{3, 32, 32, 10}, rng);
  const std::vector<LayerSummary> leaves = summarize(*model, Shape{3, 32, 32});
  const std::vector<LayerSummary> all = trace_layers(*model, Shape{3, 32, 32});
  std::map<std::string, int> kinds;
  for (const LayerSummary& l : all) ++kinds[l.kind];
  EXPECT_EQ(all.size(), leaves.size() + 27);  // 9 blocks x (relu, add, relu)
  EXPECT_EQ(kinds["add"], 9);
  EXPECT_EQ(kinds["relu"], 19);  // 18 in the blocks and the stem's
  const auto first_add = std::find_if(all.begin(), all.end(), [](const LayerSummary& l) { return l.kind == "add"; });
  ASSERT_NE(first_add, all.end());
  EXPECT_EQ(first_add->path, "layers.0.add#0");  // the first block of ResNet::layers
  EXPECT_EQ(first_add->input, (Shape{16, 32, 32}));
  EXPECT_DOUBLE_EQ(first_add->forward_flops, 16.0 * 32 * 32);
  // Every op of a training forward is in the list, once.
  OpCounter counter;
  set_op_observer(&counter);
  (*model)(Variable(Tensor::zeros({1, 3, 32, 32})));
  set_op_observer(nullptr);
  std::map<std::string, int> listed;
  for (const LayerSummary& l : all) {
    if (l.kind != "flatten")
      ++listed[l.kind == "max_pool" || l.kind == "avg_pool" || l.kind == "global_avg_pool" ? "pool" : l.kind];
  }
  int ops = 0, layers = 0;
  for (const auto& [name, n] : counter.count) ops += n;
  for (const auto& [name, n] : listed) layers += n;
  EXPECT_EQ(ops, layers);
}

TEST(LayerTrace, ModelsWithoutCompositesAreTheirLeaves) {
  Rng rng(0);
  auto model = make_model("lenet", ModelInput{}, rng);
  EXPECT_EQ(trace_layers(*model, Shape{1, 28, 28}).size(), summarize(*model, Shape{1, 28, 28}).size());
}

}  // namespace
}  // namespace dtrain::perf
