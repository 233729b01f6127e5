// The tpuemu executable: everything lives in the library (tools/cli.cpp).
// libsystemc.so provides main() -> sc_elab_and_sim() -> sc_main(); ours
// silences the SystemC banner first and then takes the same path, so commands
// that simulate run inside SystemC's expected entry point.
#include <cstdlib>
#include <systemc>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "chip/systemc_reports.hpp"
#include "dist/ranks.hpp"
#include "tools/cli.hpp"

int sc_main(int argc, char* argv[]) {
  tpuemu::chip::route_systemc_reports();  // stdout stays machine-readable
  return tpuemu::cli::run(argc, argv);
}

int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
#if defined(__GLIBC__)
  // A run's host buffers (.npy arrays, device images, HBM blocks: megabytes
  // each) come from one heap, and what one frees the next reuses instead of
  // the kernel unmapping it and faulting in fresh zeroed pages (~0.8 ms per
  // MiB on the benchmark VM; bench/README.md): one arena, so an array a host
  // thread read is reused by the main thread's allocations. Mappings stay for
  // larger blocks (a core's VMEM, touched only where used). The host threads
  // allocate nothing per task, so the one arena costs no contention.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
  // Under mpirun: one rank of a pod split over processes (dist/ranks.hpp).
  const bool mpi = tpuemu::dist::init(&argc, &argv);
  const int code = sc_core::sc_elab_and_sim(argc, argv);
  if (mpi) tpuemu::dist::finalize();
  return code;
}
