// SingleThreadRc<T>: a reference-counted owner, like std::shared_ptr, whose
// count is a plain integer instead of an atomic.
//
// Contract: every copy, move, reset, destruction and use_count() of the
// handles to one object happens on one thread (the thread that made it).
// Other threads may read or write the object itself through get() while a
// handle on that thread keeps it alive, with their own synchronisation (the
// host pool's task hand-off) ordering those accesses.
//
// Why: the MXU's deferred multiplies hold their weights and LHS copies by
// handle, four handles per multiply; with std::shared_ptr each of them is a
// locked read-modify-write, which on the issuing thread waits for the store
// buffer to drain after the 4 KiB register copies around it (10-12 % of the
// issuing thread's samples in the 2048^3 matmul run, bench/README.md).
#pragma once
#include <cstddef>
#include <utility>

namespace tpuemu {

template <class T>
class SingleThreadRc {
 public:
  SingleThreadRc() = default;
  SingleThreadRc(const SingleThreadRc& other) noexcept : box_(other.box_) {
    if (box_ != nullptr) ++box_->count;
  }
  SingleThreadRc(SingleThreadRc&& other) noexcept : box_(std::exchange(other.box_, nullptr)) {}
  SingleThreadRc& operator=(const SingleThreadRc& other) noexcept {
    if (this != &other) {
      if (other.box_ != nullptr) ++other.box_->count;
      release();
      box_ = other.box_;
    }
    return *this;
  }
  SingleThreadRc& operator=(SingleThreadRc&& other) noexcept {
    if (this != &other) {
      release();
      box_ = std::exchange(other.box_, nullptr);
    }
    return *this;
  }
  ~SingleThreadRc() { release(); }

  // A new object owned by one handle.
  template <class... Args>
  static SingleThreadRc make(Args&&... args) {
    SingleThreadRc handle;
    handle.box_ = new Box{1, T(std::forward<Args>(args)...)};
    return handle;
  }

  void reset() noexcept { release(); }
  [[nodiscard]] T* get() const noexcept { return box_ == nullptr ? nullptr : &box_->value; }
  T& operator*() const noexcept { return box_->value; }
  T* operator->() const noexcept { return &box_->value; }
  explicit operator bool() const noexcept { return box_ != nullptr; }
  // Handles sharing the object (0 for an empty handle).
  [[nodiscard]] std::size_t use_count() const noexcept { return box_ == nullptr ? 0 : box_->count; }

 private:
  // The count on a cache line of its own: other threads use the value meanwhile.
  struct Box {
    std::size_t count;
    alignas(64) T value;
  };
  void release() noexcept {
    if (box_ != nullptr && --box_->count == 0) delete box_;
    box_ = nullptr;
  }
  Box* box_ = nullptr;
};

}  // namespace tpuemu
