// A .npy file's array, for reading only: the file mapped into memory where
// that pays (data of kMapFromBytes and more, little-endian, aligned for its
// elements: the view is then the page cache's own pages, populated when the
// file is opened, with no copy and no fresh memory), else read into an
// NpyArray. Either way view() is the array read_npy would return.
//
// Why: on a virtual machine fresh memory can cost up to ~2 ms per MiB (the
// host backs each new page: 3.4-69 ms per 32 MiB on the benchmark VM), while
// a file just written or read is in the page cache already; a 16 MiB input
// read into a buffer of its own took 2.8-25.9 ms there, mapped 0.6-0.9 ms
// (bench/README.md, sessions 29 and 30).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/npy.hpp"

namespace tpuemu {

class NpyFile {
 public:
  // Smaller data is read: a mapping's set-up costs more than copying it.
  static constexpr std::uint64_t kMapFromBytes = std::uint64_t{1} << 20;

  // Opens `path` with read_npy's checks and messages (throws NpyError).
  // A file rewritten in place meanwhile may show through a mapping, so a
  // caller that rewrites the file itself lets the NpyFile go first.
  // A file cut short by another process while it is mapped: the pages cut
  // off read as zeros (a SIGBUS handler, installed with the first mapping,
  // puts a zero page where each one was, instead of the fault killing the
  // process), intact() becomes false, and once the NpyFile is released its
  // path is listed for take_files_cut_while_mapped(). So whoever reads a
  // view checks intact() (or check_intact()) after reading, or the run
  // checks that list, before it trusts what it read.
  static NpyFile open(const std::string& path);
  explicit NpyFile(NpyArray array);

  NpyFile(NpyFile&& other) noexcept;
  NpyFile& operator=(NpyFile&& other) noexcept;
  NpyFile(const NpyFile&) = delete;
  NpyFile& operator=(const NpyFile&) = delete;
  ~NpyFile();

  [[nodiscard]] NpyView view() const;
  [[nodiscard]] bool mapped() const { return mapping_ != nullptr; }
  // False once a page of the mapping was found cut off the file (see open).
  [[nodiscard]] bool intact() const;
  // Throws NpyError "<path>: the file was cut short while it was read ..." unless intact().
  void check_intact() const;
  // The array on the heap (a copy of a mapping's data; a read array moves out).
  [[nodiscard]] NpyArray take_array() &&;

 private:
  NpyFile() = default;
  void release() noexcept;

  NpyArray array_;  // when read (then also dtype and shape of a mapping)
  std::string path_;
  int guard_ = -1;  // the mapping's slot in the SIGBUS handler's table
  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  const std::uint8_t* data_ = nullptr;  // the mapping's data
  std::size_t data_bytes_ = 0;
};

// The paths of mapped NpyFiles released since the last call whose mapping
// was found cut short (see NpyFile::open), in the order released.
std::vector<std::string> take_files_cut_while_mapped();
// "<path>: the file was cut short while it was read ...": what check_intact
// throws, for a caller that reports a file take_files_cut_while_mapped listed.
std::string cut_short_message(const std::string& path);

}  // namespace tpuemu
