// A Gantt chart of a simulated schedule as a self-contained SVG file: one row per job (the
// trace's order), a tick where it was submitted, a bar per segment of constant ranks colored and
// labelled by the rank count, the start of a bar spent paying a preemption shaded dark, probe
// runs outlined dashed; a time axis and a legend of the colors.
#pragma once

#include <string>
#include <vector>

#include "schedule/job.h"
#include "schedule/simulator.h"

namespace dtrain::schedule {

std::string schedule_svg(const ScheduleResult& result, const std::vector<Job>& jobs, const std::string& title);

}  // namespace dtrain::schedule
