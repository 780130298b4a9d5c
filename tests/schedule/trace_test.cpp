// Reading job queues: dtrain's and Tiresias's CSV formats, and an error naming the row, the field
// and the fix for every kind of bad input.
#include "schedule/trace.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "support/text.h"

namespace {

using dtrain::InputError;
using dtrain::schedule::Job;
using dtrain::schedule::parse_trace;
using dtrain::test_support::contains;

const std::string kDtrainHeader = "name,model,dataset,epochs,batch,min_ranks,max_ranks,submit_time,priority\n";
const std::string kTiresiasHeader = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";

// The message parse_trace throws for `text` on a 16-rank cluster ("" when it does not throw).
std::string trace_error(const std::string& text) {
  try {
    parse_trace(text, "q.csv", 16);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Trace, ReadsDtrainRowsWithDefaultDatasets) {
  const std::vector<Job> jobs = parse_trace(kDtrainHeader +
                                                "# a comment, then a blank line\n\n"
                                                "a, resnet50, , 2, 32, 2, 8, 0, 1\n"
                                                "b,resnet20,,1,64,1,4,30.5,0\n"
                                                "c,lenet,mnist,3,16,1,1,60,-2\n",
                                            "q.csv", 16);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].name, "a");
  EXPECT_EQ(jobs[0].model, "resnet50");
  EXPECT_EQ(jobs[0].dataset, "imagenet");
  EXPECT_EQ(jobs[0].epochs, 2);
  EXPECT_EQ(jobs[0].batch, 32);
  EXPECT_EQ(jobs[0].min_ranks, 2);
  EXPECT_EQ(jobs[0].max_ranks, 8);
  EXPECT_EQ(jobs[0].priority, 1);
  EXPECT_EQ(jobs[0].samples, 0);  // epochs of the dataset, not a sample count
  EXPECT_EQ(jobs[1].dataset, "cifar10");
  EXPECT_DOUBLE_EQ(jobs[1].submit_time, 30.5);
  EXPECT_EQ(jobs[2].dataset, "mnist");
  EXPECT_EQ(jobs[2].priority, -2);
  EXPECT_EQ(jobs[2].row, 3);
  EXPECT_EQ(dtrain::schedule::default_dataset("mlp"), "fashion-mnist");
  EXPECT_EQ(dtrain::schedule::default_dataset("resnet56"), "cifar10");
}

TEST(Trace, ReadsTiresiasRowsAsSamplesAtTheirGpus) {
  // Columns in another order than the simulator writes them are found by name.
  const std::vector<Job> jobs = parse_trace(
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "0,4,0,1000,resnet56,164,30\n"
      "1,32,30,10,resnet50,147,23\n",
      "t.csv", 16);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].name, "0");
  EXPECT_EQ(jobs[0].dataset, "cifar10");
  EXPECT_EQ(jobs[0].batch, 32);
  EXPECT_EQ(jobs[0].min_ranks, 1);
  EXPECT_EQ(jobs[0].max_ranks, 4);
  EXPECT_EQ(jobs[0].samples, 1000 * 32 * 4);
  EXPECT_DOUBLE_EQ(jobs[0].trace_duration, 164);
  // 32 GPUs asked of a 16-rank cluster: at most 16 ranks, the work still counted at 32.
  EXPECT_EQ(jobs[1].max_ranks, 16);
  EXPECT_EQ(jobs[1].samples, 10 * 32 * 32);
}

TEST(Trace, EveryBadInputNamesTheRowTheFieldAndTheFix) {
  const std::string row = "a,resnet20,,1,32,1,4,0,0\n";
  EXPECT_TRUE(contains(trace_error("id,gpus\n1,2\n"), "neither dtrain's trace")) << trace_error("id,gpus\n1,2\n");
  EXPECT_TRUE(contains(trace_error(""), "no header"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader), "no job"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + row + "b,resnet20,,1,32,1,4,0\n"),
                       "q.csv: row 2 (line 3): has 8 fields, the header has 9"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,,,32,1,4,0,0\n"),
                       "q.csv: row 1 (line 2): field 'epochs' is missing (empty); give a value"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,,two,32,1,4,0,0\n"),
                       "field 'epochs' is 'two', not a whole number"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,,1,32,1,4,soon,0\n"),
                       "field 'submit_time' is 'soon', not a number"));
  EXPECT_TRUE(
      contains(trace_error(kDtrainHeader + "b,resnet20,,1,0,1,4,0,0\n"), "field 'batch' is 0; it must be positive"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,,-1,32,1,4,0,0\n"),
                       "field 'epochs' is -1; it must be positive"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,,1,32,0,4,0,0\n"),
                       "field 'min_ranks' is 0; it must be positive"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,,1,32,1,4,-5,0\n"),
                       "field 'submit_time' is -5; it must be zero or more"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,,1,32,6,4,0,0\n"),
                       "min_ranks 6 is more than max_ranks 4; give min_ranks <= max_ranks"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,vgg19,,1,32,1,4,0,0\n"),
                       "field 'model': dtrain has no model 'vgg19'; dtrain knows models: mlp, lenet, resnet20"));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + "b,resnet20,svhn,1,32,1,4,0,0\n"), "field 'dataset': "));
  EXPECT_TRUE(contains(trace_error(kDtrainHeader + row + "big,resnet50,,1,32,20,24,0,0\n"),
                       "row 2 (line 3): job 'big' can never fit: needs 20 ranks, the cluster has 16"));
  EXPECT_TRUE(contains(trace_error(kTiresiasHeader + "0,0,0,100,resnet50,10,1\n"),
                       "field 'num_gpu' is 0; it must be positive"));
  EXPECT_TRUE(contains(trace_error(kTiresiasHeader + "0,2,0,0,resnet50,10,1\n"),
                       "field 'iterations' is 0; it must be positive"));
  EXPECT_TRUE(contains(trace_error(kTiresiasHeader + "0,2,0,10,inception3,10,1\n"),
                       "field 'model_name': dtrain has no model 'inception3'"));
  EXPECT_TRUE(contains(trace_error(kTiresiasHeader + "0,2,0,10,resnet50,,1\n"), "field 'duration' is missing"));
}

TEST(Trace, AMissingFileSaysWhichFlag) {
  try {
    dtrain::schedule::read_trace("/nonexistent/q.csv", 4);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "cannot read the trace '/nonexistent/q.csv'")) << e.what();
  }
}

}  // namespace
