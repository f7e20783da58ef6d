//===- ExitSignal.cpp - --exit-signal-handler's signal handler
//-------------===//

#include "train/ExitSignal.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace mtrt::train {

namespace {

/// A flag is all a signal handler may safely touch.
volatile std::sig_atomic_t noted = 0;

void note(int) { noted = 1; }

} // namespace

Status ExitSignalHandler::install(int number) {
  struct sigaction action = {};
  action.sa_handler = note;
  sigemptyset(&action.sa_mask);
  // Interrupted system calls (a wait in a collective, a write) resume.
  action.sa_flags = SA_RESTART;
  noted = 0;
  if (::sigaction(number, &action, &previous) != 0)
    return Status::error(std::string("--exit-signal-handler: cannot handle "
                                     "the signal (") +
                         std::strerror(errno) + ")");
  signal = number;
  return Status::ok();
}

ExitSignalHandler::~ExitSignalHandler() {
  if (signal != 0)
    ::sigaction(signal, &previous, nullptr);
}

bool ExitSignalHandler::received() { return noted != 0; }

} // namespace mtrt::train
