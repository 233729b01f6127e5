// The bytes of an NpyArray: heap memory, or a private mapping of the .npy file
// they were read from (map_npy), whose pages are the file's cached pages until
// something writes to them (copy on write). Reading a big input through a
// mapping costs no fresh memory: on the benchmark VM fresh memory is the most
// expensive part of reading a 16 MiB array (the kernel zeroes every page it
// hands out, at 1 GB/s or less when the host has to back it first).
//
// Contract: a value type like std::vector<std::uint8_t>. Copies are deep and
// live on the heap; a move keeps the mapping. Any operation that changes the
// size (assign, resize, pop_back) first moves mapped bytes to the heap;
// writing through data() to mapped bytes changes this object only, never the
// file. A mapping stays valid while the file is not truncated (the caller
// maps only files nothing in the run rewrites).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

namespace tpuemu {

class NpyBytes {
 public:
  NpyBytes() = default;
  NpyBytes(std::vector<std::uint8_t> bytes) : heap_(std::move(bytes)) {}  // NOLINT(google-explicit-constructor)
  NpyBytes(std::initializer_list<std::uint8_t> bytes) : heap_(bytes) {}
  template <class It>
  NpyBytes(It first, It last) : heap_(first, last) {}

  NpyBytes(const NpyBytes& other) : heap_(heap_copy(other.data(), other.size())) {}
  NpyBytes& operator=(const NpyBytes& other) {
    if (this != &other) *this = NpyBytes(other);
    return *this;
  }
  NpyBytes(NpyBytes&&) noexcept = default;
  NpyBytes& operator=(NpyBytes&&) noexcept = default;
  ~NpyBytes() = default;

  // `length` bytes of the open file `fd` from `offset`, mapped privately
  // (copy on write). Returns an empty NpyBytes with mapped() false when the
  // file cannot be mapped (the caller then reads it). offset + length must
  // lie within the file.
  static NpyBytes map_file(int fd, std::uint64_t offset, std::size_t length);

  [[nodiscard]] bool mapped() const { return map_ != nullptr; }
  [[nodiscard]] std::uint8_t* data() { return map_ ? map_data_ : heap_.data(); }
  [[nodiscard]] const std::uint8_t* data() const { return map_ ? map_data_ : heap_.data(); }
  [[nodiscard]] std::size_t size() const { return map_ ? map_size_ : heap_.size(); }
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] std::uint8_t* begin() { return data(); }
  [[nodiscard]] std::uint8_t* end() { return data() + size(); }
  [[nodiscard]] const std::uint8_t* begin() const { return data(); }
  [[nodiscard]] const std::uint8_t* end() const { return data() + size(); }
  std::uint8_t& operator[](std::size_t i) { return data()[i]; }
  const std::uint8_t& operator[](std::size_t i) const { return data()[i]; }
  operator std::span<const std::uint8_t>() const { return {data(), size()}; }  // NOLINT(google-explicit-constructor)

  template <class It>
  void assign(It first, It last) {
    drop_mapping();
    heap_.assign(first, last);
  }
  // Grows with zero bytes, in huge pages when it is big (resize_zeroed).
  void resize(std::size_t size);
  void pop_back() {
    to_heap();
    heap_.pop_back();
  }
  // The heap bytes (moving mapped bytes there first); valid until the next change.
  std::vector<std::uint8_t>& heap() {
    to_heap();
    return heap_;
  }

  friend bool operator==(const NpyBytes& a, const NpyBytes& b);
  friend bool operator==(const NpyBytes& a, const std::vector<std::uint8_t>& b);

 private:
  struct Unmap {
    std::size_t length;
    void operator()(void* base) const;
  };
  // A heap copy, in huge pages when it is big.
  static std::vector<std::uint8_t> heap_copy(const std::uint8_t* bytes, std::size_t size);
  void to_heap();
  void drop_mapping() { map_.reset(); }

  std::vector<std::uint8_t> heap_;
  std::unique_ptr<void, Unmap> map_{nullptr, Unmap{0}};  // the whole mapping (page-aligned)
  std::uint8_t* map_data_ = nullptr;
  std::size_t map_size_ = 0;
};

}  // namespace tpuemu
