// Published ResNet-50 ImageNet runs predicted from the spec-sheet profiles alone (nothing fitted):
// docs/perfmodel.md, "Published runs".
#include "perfmodel/published.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

// Both within 25% (He et al. -15.9%, Goyal et al. -22.3% when last checked).
TEST(Published, PredictedWithinToleranceOfPublished) {
  const std::vector<PublishedCheck> checks = check_published_runs();
  ASSERT_EQ(checks.size(), 2u);
  std::printf("%s", format_published(checks).c_str());
  EXPECT_EQ(checks[0].run.name, "he2016");
  EXPECT_EQ(checks[1].run.name, "goyal2017");
  for (const PublishedCheck& c : checks) {
    EXPECT_DOUBLE_EQ(c.run.tolerance, 0.25) << c.run.name;
    EXPECT_LE(std::abs(c.error), c.run.tolerance)
        << c.run.citation << ": predicted " << c.predicted_hours << " h, published " << c.run.published_hours << " h";
  }
  // Nothing fitted: the prediction comes from the built-in spec-sheet profiles as shipped. The
  // same compute on 8 and 256 GPUs; the wait for the slowest GPU (1.5% variation) grows with p.
  const StepPrediction& he = checks[0].prediction.step;
  const StepPrediction& goyal = checks[1].prediction.step;
  EXPECT_NEAR(he.compute, 0.1884, 0.002);
  EXPECT_DOUBLE_EQ(goyal.compute, he.compute);
  EXPECT_NEAR(he.straggler, 0.015 * he.compute * 1.4236, 1e-4);        // E[max of 8 normals] = 1.4236
  EXPECT_NEAR(goyal.straggler, 0.015 * goyal.compute * 2.8269, 1e-4);  // E[max of 256] = 2.8269
}

}  // namespace
}  // namespace dtrain::perf
