// Published ResNet-50 ImageNet runs predicted from the spec-sheet profiles alone (nothing fitted):
// docs/perfmodel.md, "Published runs".
#include "perfmodel/published.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

// He et al. within 25%; Goyal et al. within 30% (PublishedRun::tolerance says why).
TEST(Published, PredictedWithinToleranceOfPublished) {
  const std::vector<PublishedCheck> checks = check_published_runs();
  ASSERT_EQ(checks.size(), 2u);
  std::printf("%s", format_published(checks).c_str());
  EXPECT_EQ(checks[0].run.name, "he2016");
  EXPECT_DOUBLE_EQ(checks[0].run.tolerance, 0.25);
  for (const PublishedCheck& c : checks) {
    EXPECT_LE(std::abs(c.error), c.run.tolerance)
        << c.run.citation << ": predicted " << c.predicted_hours << " h, published " << c.run.published_hours << " h";
  }
  // Nothing fitted: the prediction comes from the built-in spec-sheet profiles as shipped.
  EXPECT_NEAR(checks[0].prediction.step.step, 0.1884, 0.002);
}

}  // namespace
}  // namespace dtrain::perf
