// LD_PRELOAD shim for tests/cli/signal_after_run.sh: the process's first
// fflush(stdout) first sends the process SIGINT. `tpuemu run` flushes stdout
// for the first time right after it prints the report, so the signal comes
// when the emulation has ended and before the outputs are written: at a known
// point, with no timing involved.
#include <dlfcn.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

extern "C" int fflush(FILE* stream) {
  using Flush = int (*)(FILE*);
  static const auto real_fflush = reinterpret_cast<Flush>(dlsym(RTLD_NEXT, "fflush"));
  static bool raised = false;
  if (stream == stdout && !raised) {
    raised = true;
    kill(getpid(), SIGINT);
  }
  return real_fflush(stream);
}
