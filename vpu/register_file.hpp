// A register file whose storage is allocated on first use: an idle or
// timing-only TensorCore (whose vector results are discarded) never pays for
// its 64 x 4 KiB of vregs. Unallocated registers read as zero, exactly like a
// freshly allocated file.
#pragma once

#include <cstddef>
#include <memory>

namespace tpuemu::vpu {

template <typename Register>
class RegisterFile {
 public:
  explicit RegisterFile(std::size_t count) : count_(count) {}

  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] bool allocated() const { return registers_ != nullptr; }

  // Contract: index < size(). The first mutable access allocates the file.
  Register& operator[](std::size_t index) {
    if (registers_ == nullptr) registers_ = std::make_unique<Register[]>(count_);
    return registers_[index];
  }
  const Register& operator[](std::size_t index) const {
    static const Register kZero{};
    return registers_ == nullptr ? kZero : registers_[index];
  }

 private:
  std::size_t count_;
  std::unique_ptr<Register[]> registers_;
};

}  // namespace tpuemu::vpu
