// Files the commands write (reports, .npy outputs, traces, waveforms,
// generated programs): checked before any work starts, so a typo in a path
// costs nothing, and written with every failure reported.
#pragma once

#include <optional>
#include <string>

namespace tpuemu::api {

// Throws std::invalid_argument "OPTION PATH: cannot write this file (REASON)"
// unless PATH could be written now: an existing file must be a writable
// regular file (or a character device such as /dev/null), a new file needs an
// existing, writable folder. Creates and changes nothing.
void check_writable(const std::string& option, const std::string& path);

// Writes `text` to `path` (replacing it). Returns "OPTION PATH: writing
// failed (REASON)" if opening, writing or closing failed. Only MPI rank 0
// writes (every rank of a pod split over ranks has the same result).
std::optional<std::string> write_text_file(const std::string& option, const std::string& path, const std::string& text);

}  // namespace tpuemu::api
