// Stopping a run from outside it (SIGINT/SIGTERM in the CLI): request_stop()
// is async-signal-safe; every core checks stop_requested() at the end of each
// quantum and stops the run with a fault naming itself, its bundle and cycle,
// as a program fault would.
#pragma once

namespace tpuemu::chip {

// Records `signal_number` (non-zero); the first request wins.
void request_stop(int signal_number) noexcept;
// The signal that requested a stop, or 0.
[[nodiscard]] int stop_requested() noexcept;

// SIGINT and SIGTERM call request_stop. With `second_kills`, a second one
// takes the default action (the process dies at once); without, further
// signals are absorbed (a worker process that may get the terminal's SIGINT
// and its parent's forwarded one).
void install_stop_signal_handlers(bool second_kills);

}  // namespace tpuemu::chip
