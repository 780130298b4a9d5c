#include "train/stop_signal.h"

#include <fmt/format.h>

#include <csignal>

namespace dtrain {
namespace {

volatile std::sig_atomic_t first_stop_signal = 0;

extern "C" void record_stop_signal(int signal) {
  if (first_stop_signal == 0) first_stop_signal = signal;
}

}  // namespace

void install_stop_signals() {
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGTERM, SIGUSR1, SIGUSR2}) sigaction(signal, &action, nullptr);
}

int stop_signal_received() { return first_stop_signal; }

void clear_stop_signal() { first_stop_signal = 0; }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGINT:
      return "SIGINT";
    default:
      return fmt::format("signal {}", signal);
  }
}

}  // namespace dtrain
