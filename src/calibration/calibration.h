// `dtrain calibrate`: every constant of a profile (profile.h, schema version 1) measured on the
// machines it runs on, by the micro-benchmarks of calibrate_compute.h (device) and
// calibrate_transport.h (links), written as a profile whose every value's source reads
// "calibrated on HOST at DATE by dtrain calibrate; <how>".
//
// Run it as the training runs it predicts will run: under mpirun with the same ranks per host and
// compute threads per rank. Ranks sharing a host run each benchmark at the same moment, so the
// rates it records are each rank's share of the host (2 ranks on 2 cores get about half a core
// each for their compute... and their memory bandwidth), which is what a data-parallel step sees.
// Device constants are the harmonic mean over ranks (the mean of their times); the node's disk
// rate is the sum over the ranks of one host; links are measured between ranks (see
// calibrate_transport.h). The step variation, where every rank has CPUs of its own, comes from
// compute steps run in lockstep (a barrier before each), in four blocks spread through the
// calibration: the ranks' deviations from each step's mean (straggler.h: lockstep_variation),
// which leave out what slowed every rank alike and keep a rank that is slower every step.
// Elsewhere (one process; ranks taking turns on shared CPUs, whose wait turn_taking prices) it
// combines the spread of each rank's unsynchronised steps with the spread of the ranks' medians:
// sqrt(mean of the ranks' variances + variance of their medians) / mean median.
// The turns of time-shared ranks come from blocks of unsynchronised steps at the same four
// moments as the lockstep blocks (the device benchmarks' own steps being the first), the median
// block's: one rank preempted for a while makes one block slow, not the estimate. 4 ranks on the
// 2-core VM of 2026-12-01, ResNet-20, 6 calibrations each way against one pass per shape and one
// block: the ring f32 step predicted -4.5..+9.3% (4.4% mean absolute) against +1.4..+14.5%
// (5.6%), the turns 5.8-14.0% against 5.2-17.2%.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "calibration/calibrate_compute.h"
#include "calibration/calibrate_overlap.h"
#include "calibration/calibrate_transport.h"
#include "parallel/comm_worker.h"
#include "perfmodel/profile.h"

namespace dtrain::perf {

struct CalibrationOptions {
  ComputeCalibrationOptions device;  // its barrier is set by calibrate()
  double min_seconds = 0.1;          // per transport measurement
  int threads = 1;                   // compute threads per rank (recorded; the caller sets them)
  std::string name;                  // profile name; "" = "calibrated-HOST"
};

struct Calibration {
  DeviceCalibration device;        // over all ranks (timings: rank 0's)
  TransportCalibration transport;  // ranks == 1: not measured
  OverlapCalibration overlap;      // ranks == 1: not measured
  OverlapCalibration mpi_overlap;  // beside MPI_Allreduce; not measured without mpi_allreduce points
  int ranks = 1;
  int threads = 1;
  std::string host;    // rank 0's host name
  std::string date;    // UTC, ISO 8601 to the minute
  double seconds = 0;  // the calibration's own run time
  // Cache-line round trips between two cores of rank 0's host (core/core_round_trip.h), seconds,
  // sampled at the start, middle and end; empty on one CPU.
  std::vector<double> core_round_trips;
  int host_cores = 0;  // logical CPUs the ranks of rank 0's host may run on (0: unknown)
  // The unsynchronised compute steps (the blocks of turn_blocks below), averaged over the ranks:
  // their mean, and the expected slowest of `ranks` draws of them (straggler.h: expected_slowest),
  // as set_turns combines the blocks.
  double steps_alone = 0, steps_slowest = 0;
  // The turns (turn_taking) of each block of unsynchronised steps: the device benchmarks' steps,
  // and where ranks time-share CPUs a block after them and after each overlap measurement.
  // steps_slowest is steps_alone x (1 + their median).
  std::vector<double> turn_blocks;
  // The step variation both ways (device.step_variation is the lockstep one where measured): from
  // the unsynchronised steps (within + between, above), and from steps in lockstep (straggler.h:
  // lockstep_variation; -1 where not measured: one process, or ranks outnumbering their CPUs).
  double free_variation = 0, lockstep_variation = -1;
  std::size_t lockstep_steps = 0;  // per rank, over all blocks
  // Parameters/s of the update of ranks sharing one copy of the weights (calibrate_shared_update.h),
  // the harmonic mean over the ranks; 0 where not measured (one process, or ranks on several hosts).
  double shared_update = 0;
  CalibrationOptions options;
};

// Throws InputError, naming dtrain calibrate's flag, for an unknown model, a --min-seconds not
// above 0, or threads, batch or rounds out of range.
void check_calibration_options(const CalibrationOptions& options);

// A collective over the worker's ranks (worker null: one process, no transport measured).
Calibration calibrate(CommWorker* worker, CalibrationOptions options);

// Taking turns (profile.h: turn_taking): the expected slowest of the ranks' compute steps over
// their mean, minus 1 (0 where not timed). Ranks that time-share CPUs run their unsynchronised
// steps now on a CPU to themselves, now on half of one (mlp on 4 ranks of the 2-core VM: 2.4 ms
// at the 10th percentile, 6.4 ms at the median, 5.0 ms in the mean). The per-layer rates are
// means, so they count the fast steps; a synchronous step starts every rank at once and ends
// with the slowest, so it waits for the shared ones: E[max of p draws] (6.5-6.9 ms there).
double turn_taking(const Calibration& c);

// Whether rank 0's host ran more compute threads than it has CPUs, with compute steps timed: the
// ranks took turns, and turn_taking prices it.
bool took_turns(const Calibration& c);

// c.turn_blocks in percent, for the profile's source and the report.
std::vector<double> turn_percentages(const Calibration& c);

// The turns of each block of unsynchronised steps from its mean step and its expected slowest
// (both averaged over the ranks), max(0, slowest / mean - 1), into c.turn_blocks; steps_alone
// the blocks' mean step and steps_slowest that x (1 + the median block's turns): a block that met
// a slow moment of the machine (a rank preempted for a while) is one of several, not the
// estimate. Throws for no blocks or mismatched lists.
void set_turns(Calibration& c, const std::vector<double>& alone, const std::vector<double>& slowest);

// The profile of a calibration: device, node (ranks per host as accelerators, the same-host link,
// the disk), network when the ranks spanned hosts.
Profile calibrated_profile(const Calibration& c);

// What was measured, for the terminal: per-kind rates with their shapes, links, the rest
// (calibration_report.cpp).
std::string format_calibration(const Calibration& c, bool per_shape);

}  // namespace dtrain::perf
