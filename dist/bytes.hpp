// Flat byte encoding for what ranks send each other: trivially copyable
// values in host byte order (every rank runs the same build on the same kind
// of host: checked at start), length-prefixed vectors and strings.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "dist/ranks.hpp"

namespace tpuemu::dist {

class ByteWriter {
 public:
  template <typename T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    // resize + memcpy: GCC 12 at -O2 takes vector::insert of a few bytes into
    // an empty vector for an overflow (-Wstringop-overflow).
    const std::size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  void put_bytes(const std::vector<std::uint8_t>& v) {
    put<std::uint64_t>(v.size());
    bytes_.insert(bytes_.end(), v.begin(), v.end());
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<std::uint64_t>(v.size());
    if (v.empty()) return;
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    bytes_.insert(bytes_.end(), p, p + v.size() * sizeof(T));
  }
  [[nodiscard]] bool empty() const { return bytes_.empty(); }
  Bytes take() { return std::move(bytes_); }

 private:
  Bytes bytes_;
};

// Reads what a ByteWriter wrote; std::out_of_range past the end.
class ByteReader {
 public:
  explicit ByteReader(const Bytes& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }
  std::vector<std::uint8_t> get_bytes() {
    const auto n = get<std::uint64_t>();
    const std::uint8_t* p = take(n);
    return {p, p + n};
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    const std::uint8_t* p = take(n);
    return {reinterpret_cast<const char*>(p), n};
  }
  template <typename T>
  std::vector<T> get_vector() {
    const auto n = get<std::uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(T)) throw std::out_of_range("ByteReader: truncated vector");
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));  // no memcpy to null
    return v;
  }
  [[nodiscard]] bool done() const { return at_ == bytes_.size(); }

 private:
  const std::uint8_t* take(std::uint64_t n) {
    if (n > bytes_.size() - at_) throw std::out_of_range("ByteReader: truncated message");
    const std::uint8_t* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  const Bytes& bytes_;
  std::size_t at_ = 0;
};

}  // namespace tpuemu::dist
