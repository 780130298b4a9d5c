// Reading a cluster's job queue from a CSV trace with a header. Two formats, told apart by the
// header's columns (in any order):
//   dtrain    name,model,dataset,epochs,batch,min_ranks,max_ranks,submit_time,priority
//             (dataset may be empty: default_dataset of the model);
//   Tiresias  job_id,num_gpu,submit_time,iterations,model_name,duration,interval
//             (the simulator trace of Gu et al., NSDI 2019: the job asks for num_gpu ranks and
//             its work is `iterations` steps of batch 32 per rank at num_gpu ranks; it may run
//             on 1 to num_gpu ranks; duration is kept to report beside the model's estimate,
//             interval is read and ignored).
// Fields are plain (no quoting); blank lines and lines starting with '#' are skipped. A job may
// ask for more ranks than the cluster has: its max_ranks is cut to the cluster's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schedule/job.h"

namespace dtrain::schedule {

// Throws InputError naming the row, the field and the fix for a missing field, a value that is
// not a number, a count or time out of range, min_ranks > max_ranks, a model dtrain does not know,
// an unknown dataset and a job whose min_ranks exceed the cluster's `cluster_ranks`.
std::vector<Job> parse_trace(std::string_view text, const std::string& origin, int cluster_ranks);
std::vector<Job> read_trace(const std::string& path, int cluster_ranks);

}  // namespace dtrain::schedule
