#include "common/npy_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <utility>

namespace tpuemu {
namespace {

// Mappings a SIGBUS may hit: [begin, end) of each live mapping, and whether
// the handler found a page of it cut off its file. A slot is claimed by a
// CAS of `begin` from 0 (end written first) and freed by storing 0 in
// `begin`; the handler reads both with acquire loads. Fixed size: a file
// opened when every slot is taken is read, not mapped.
struct GuardSlot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<bool> cut{false};
};
constexpr std::size_t kGuardSlots = 256;
std::array<GuardSlot, kGuardSlots> g_slots;
std::uintptr_t g_page_bytes = 4096;
struct sigaction g_previous_sigbus {};

std::mutex g_cut_mutex;
std::vector<std::string> g_cut_files;  // guarded by g_cut_mutex

// Async-signal-safe: atomics and mmap only.
void on_sigbus(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (GuardSlot& slot : g_slots) {
    const std::uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= slot.end.load(std::memory_order_acquire)) continue;
    // A page of a mapped .npy file cut off the file: a zero page in its
    // place, so the access that faulted reads zeros when it resumes.
    const std::uintptr_t page = address & ~(g_page_bytes - 1);
    void* zero =
        ::mmap(reinterpret_cast<void*>(page), g_page_bytes, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (zero != MAP_FAILED) {
      slot.cut.store(true, std::memory_order_release);
      return;
    }
    break;
  }
  // Not ours (or no page to put there): as without this handler.
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) != 0 && g_previous_sigbus.sa_sigaction != nullptr) {
    g_previous_sigbus.sa_sigaction(signal, info, context);
    return;
  }
  if ((g_previous_sigbus.sa_flags & SA_SIGINFO) == 0 && g_previous_sigbus.sa_handler != SIG_DFL &&
      g_previous_sigbus.sa_handler != SIG_IGN) {
    g_previous_sigbus.sa_handler(signal);
    return;
  }
  // The default action: the process ends by SIGBUS, as it would have (the
  // signal raised again is delivered when this handler returns; a fault
  // would also recur).
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(SIGBUS, &default_action, nullptr);
  ::raise(signal);
}

void install_sigbus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    const long page = ::sysconf(_SC_PAGESIZE);
    if (page > 0) g_page_bytes = static_cast<std::uintptr_t>(page);
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

// A free slot for [begin, begin + bytes), or -1.
int claim_slot(const void* begin, std::size_t bytes) {
  install_sigbus_handler();
  const auto first = reinterpret_cast<std::uintptr_t>(begin);
  for (std::size_t i = 0; i < kGuardSlots; ++i) {
    GuardSlot& slot = g_slots[i];
    if (slot.begin.load(std::memory_order_relaxed) != 0) continue;
    slot.cut.store(false, std::memory_order_relaxed);
    slot.end.store(first + bytes, std::memory_order_relaxed);
    std::uintptr_t expected = 0;
    if (slot.begin.compare_exchange_strong(expected, first, std::memory_order_acq_rel)) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

NpyFile NpyFile::open(const std::string& path) {
  const NpyFileHeader header = read_npy_header(path);  // read_npy's checks and messages
  const bool worth_mapping =
      header.data_bytes >= kMapFromBytes && !header.big_endian && header.data_offset % element_size(header.dtype) == 0;
  if (worth_mapping) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    const std::uint64_t total = header.data_offset + header.data_bytes;
    // The file as its header was checked (else it changed since: read it
    // again, with read_npy's messages).
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == total) {
      void* mapping = ::mmap(nullptr, total, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      ::close(fd);
      const int guard = mapping == MAP_FAILED ? -1 : claim_slot(mapping, total);
      if (mapping != MAP_FAILED && guard < 0) ::munmap(mapping, total);  // no slot left: read it
      if (guard >= 0) {
        NpyFile file;
        file.path_ = path;
        file.guard_ = guard;
        file.array_.dtype = header.dtype;
        file.array_.shape = header.shape;
        file.mapping_ = mapping;
        file.mapping_bytes_ = total;
        file.data_ = static_cast<const std::uint8_t*>(mapping) + header.data_offset;
        file.data_bytes_ = header.data_bytes;
        return file;
      }
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  return NpyFile(read_npy(path));
}

NpyFile::NpyFile(NpyArray array) : array_(std::move(array)) {}

NpyFile::NpyFile(NpyFile&& other) noexcept
    : array_(std::move(other.array_)),
      path_(std::move(other.path_)),
      guard_(std::exchange(other.guard_, -1)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      data_bytes_(std::exchange(other.data_bytes_, 0)) {}

NpyFile& NpyFile::operator=(NpyFile&& other) noexcept {
  if (this != &other) {
    release();
    array_ = std::move(other.array_);
    path_ = std::move(other.path_);
    guard_ = std::exchange(other.guard_, -1);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    data_bytes_ = std::exchange(other.data_bytes_, 0);
  }
  return *this;
}

NpyFile::~NpyFile() {
  release();
}

void NpyFile::release() noexcept {
  if (mapping_ != nullptr) {
    if (!intact()) {
      try {
        const std::lock_guard lock(g_cut_mutex);
        g_cut_files.push_back(path_);
      } catch (...) {  // no memory for the note: the process is failing anyway
      }
    }
    // Unlisted before unmapped: the range may be mapped again by anyone.
    g_slots[static_cast<std::size_t>(guard_)].begin.store(0, std::memory_order_release);
    ::munmap(mapping_, mapping_bytes_);
  }
  guard_ = -1;
  mapping_ = nullptr;
  mapping_bytes_ = 0;
  data_ = nullptr;
  data_bytes_ = 0;
}

bool NpyFile::intact() const {
  return guard_ < 0 || !g_slots[static_cast<std::size_t>(guard_)].cut.load(std::memory_order_acquire);
}

std::string cut_short_message(const std::string& path) {
  return fmt::format(
      "{}: the file was cut short while it was read (truncated by another process?); what was read is not its data",
      path);
}

void NpyFile::check_intact() const {
  if (!intact()) throw NpyError(cut_short_message(path_));
}

std::vector<std::string> take_files_cut_while_mapped() {
  const std::lock_guard lock(g_cut_mutex);
  return std::exchange(g_cut_files, {});
}

NpyView NpyFile::view() const {
  if (mapping_ == nullptr) return NpyView(array_);
  return {array_.dtype, array_.shape, {data_, data_bytes_}};
}

NpyArray NpyFile::take_array() && {
  if (mapping_ != nullptr) {
    NpyArray copy = copy_array(view());
    check_intact();
    release();
    return copy;
  }
  return std::move(array_);
}

}  // namespace tpuemu
