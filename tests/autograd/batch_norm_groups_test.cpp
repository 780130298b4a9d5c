// Ghost batch norm (autograd/ops/norm.h) equals an ordinary batch norm of each group: outputs,
// gradients and running statistics, in the plain layout and in the blocked one the convolutions
// keep activations in; a group that does not divide the batch is refused.
#include <gtest/gtest.h>

#include <vector>

#include "autograd/ops.h"
#include "core/error.h"
#include "test_util.h"

namespace dtrain {
namespace {

ops::BatchNormState fresh_state(std::int64_t channels) {
  ops::BatchNormState st;
  st.running_mean = Tensor::zeros({channels});
  st.running_var = Tensor::full({channels}, 1.0);
  return st;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

void check_ghost_equals_groups(Layout layout) {
  const std::int64_t n = 8, c = 16, group = 2;
  const Tensor x_plain = testing::random_var({n, c, 3, 3}, 1, -2, 3, false, DType::kF32).data();
  const Tensor dy = testing::random_var({n, c, 3, 3}, 2, -1, 1, false, DType::kF32).data();
  Variable gamma(testing::random_var({c}, 3, 0.5, 1.5, false, DType::kF32).data(), true);
  Variable beta(testing::random_var({c}, 4, -1, 1, false, DType::kF32).data(), true);

  ops::BatchNormState ghost = fresh_state(c);
  ghost.group = group;
  Variable x(x_plain.to_layout(layout), true);
  Variable y = ops::batch_norm(x, gamma, beta, ghost, true);
  y.backward(dy.to_layout(y.data().layout()));
  const std::vector<float> y_ghost = y.data().to_layout(Layout::kPlain).to_vector();
  const std::vector<float> dx_ghost = x.grad().to_layout(Layout::kPlain).to_vector();
  const std::vector<float> dgamma_ghost = gamma.grad().to_vector(), dbeta_ghost = beta.grad().to_vector();

  std::vector<float> y_groups, dx_groups, dgamma(c, 0.0F), dbeta(c, 0.0F), mean(c, 0.0F), var(c, 0.0F);
  for (std::int64_t lo = 0; lo < n; lo += group) {
    ops::BatchNormState st = fresh_state(c);
    st.momentum = 1.0;  // the running statistics become the group's (variance unbiased)
    Variable xg(x_plain.slice_rows(lo, lo + group).clone(), true);
    Variable g(gamma.data().clone(), true), b(beta.data().clone(), true);
    Variable yg = ops::batch_norm(xg, g, b, st, true);
    yg.backward(dy.slice_rows(lo, lo + group).clone());
    for (float v : yg.data().to_vector()) y_groups.push_back(v);
    for (float v : xg.grad().to_vector()) dx_groups.push_back(v);
    const auto gg = g.grad().to_vector(), bg = b.grad().to_vector();
    const auto m = st.running_mean.to_vector(), s = st.running_var.to_vector();
    for (std::int64_t k = 0; k < c; ++k) {
      dgamma[k] += gg[k];
      dbeta[k] += bg[k];
      mean[k] += m[k] / (n / group);
      var[k] += s[k] / (n / group);
    }
  }
  expect_near(y_ghost, y_groups, 1e-5, "y");
  expect_near(dx_ghost, dx_groups, 1e-4, "dx");
  expect_near(dgamma_ghost, dgamma, 1e-4, "dgamma");
  expect_near(dbeta_ghost, dbeta, 1e-4, "dbeta");
  // momentum 0.1 from (0, 1) towards the groups' average statistics
  std::vector<float> want_mean(c), want_var(c);
  for (std::int64_t k = 0; k < c; ++k) {
    want_mean[k] = 0.1F * mean[k];
    want_var[k] = 0.9F + 0.1F * var[k];
  }
  expect_near(ghost.running_mean.to_vector(), want_mean, 1e-6, "running mean");
  expect_near(ghost.running_var.to_vector(), want_var, 1e-5, "running var");
}

TEST(GhostBatchNorm, EqualsEachGroupNormalisedAlonePlain) { check_ghost_equals_groups(Layout::kPlain); }

TEST(GhostBatchNorm, EqualsEachGroupNormalisedAloneBlocked) { check_ghost_equals_groups(Layout::kNChw16c); }

TEST(GhostBatchNorm, GroupMustDivideTheBatch) {
  ops::BatchNormState st = fresh_state(2);
  st.group = 3;
  Variable x(Tensor::full({4, 2}, 1.0), false);
  Variable g(Tensor::full({2}, 1.0), false), b(Tensor::zeros({2}), false);
  try {
    (void)ops::batch_norm(x, g, b, st, true);
    FAIL() << "a group of 3 in a batch of 4 was accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("--bn-group"), std::string::npos) << e.what();
  }
  st.group = 4;  // the whole batch: an ordinary batch norm
  EXPECT_NO_THROW((void)ops::batch_norm(x, g, b, st, true));
}

}  // namespace
}  // namespace dtrain
