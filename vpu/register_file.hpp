// A register file whose storage is allocated on first use: an idle or
// timing-only TensorCore (whose vector results are discarded) never pays for
// its 64 x 4 KiB of vregs. Unallocated registers read as zero, exactly like a
// freshly allocated file.
//
// Registers are renamed rather than copied when a bundle commits: a result is
// written into a spare buffer (take_spare()) and install() makes that buffer
// the register, the register's previous buffer becoming a spare. A 4 KiB vreg
// result so costs one write, not a write and a copy; a unit that computed a
// result in a buffer of its own may hand that buffer over instead (swap it
// with the spare).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tpuemu::vpu {

template <typename Register>
class RegisterFile {
 public:
  using Buffer = std::unique_ptr<Register>;

  explicit RegisterFile(std::size_t count) : count_(count) {}

  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] bool allocated() const { return !registers_.empty(); }

  // Contract: index < size(). The first mutable access allocates the file.
  // A reference stays valid until the next install() of the same index.
  Register& operator[](std::size_t index) {
    if (registers_.empty()) allocate();
    return *registers_[index];
  }
  const Register& operator[](std::size_t index) const {
    static const Register kZero{};
    return registers_.empty() ? kZero : *registers_[index];
  }

  // A buffer that is no register, with unspecified contents.
  Buffer take_spare() {
    if (registers_.empty()) allocate();
    if (spares_.empty()) return std::make_unique<Register>();
    Buffer b = std::move(spares_.back());
    spares_.pop_back();
    return b;
  }
  // Register `index` now holds `buffer` (not null); its previous buffer becomes a spare.
  void install(std::size_t index, Buffer buffer) {
    if (registers_.empty()) allocate();
    spares_.push_back(std::move(registers_[index]));
    registers_[index] = std::move(buffer);
  }

 private:
  void allocate() {
    registers_.resize(count_);
    for (auto& r : registers_) r = std::make_unique<Register>();
  }

  std::size_t count_;
  std::vector<Buffer> registers_;  // empty until the first mutable access
  std::vector<Buffer> spares_;     // buffers that are no register
};

}  // namespace tpuemu::vpu
