// A time-ordered event queue for the network's plain-C++ event loop: a 4-ary
// min-heap of 16-byte nodes (time, sequence and payload slot), the payloads
// kept apart in a slab, so a pod's many in-flight packets sift through few
// cache lines.
//
// Contract: events leave in (time, push order) order - equal times in the
// order they were pushed - exactly as a std::priority_queue over (time, a
// push counter) would give them. At most 2^24 events may be pending at once
// and 2^40 pushed in all (std::length_error beyond).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tpuemu::ici {

template <typename Payload>
class EventQueue {
 public:
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const { return heap_.size(); }
  // Contract for top_time/top/pop: !empty().
  [[nodiscard]] double top_time() const { return heap_.front().time; }
  [[nodiscard]] const Payload& top() const { return payloads_[heap_.front().key & kSlotMask]; }

  void push(double time, const Payload& payload) {
    std::uint64_t slot = 0;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      payloads_[slot] = payload;
    } else {
      slot = payloads_.size();
      if (slot > kSlotMask) throw std::length_error("network event queue: more than 2^24 pending events");
      payloads_.push_back(payload);
    }
    if (sequence_ >> (64 - kSlotBits) != 0) throw std::length_error("network event queue: more than 2^40 events");
    const Node node{time, sequence_++ << kSlotBits | slot};
    std::size_t i = heap_.size();
    heap_.push_back(node);
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (!before(node, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = node;
  }

  void pop() {
    free_.push_back(static_cast<std::uint32_t>(heap_.front().key & kSlotMask));
    const Node last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return;
    std::size_t i = 0;
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = first + kArity < n ? first + kArity : n;
      for (std::size_t c = first + 1; c < end; ++c) {
        if (before(heap_[c], heap_[best])) best = c;
      }
      if (!before(heap_[best], last)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
  }

 private:
  static constexpr std::size_t kArity = 4;
  static constexpr unsigned kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  struct Node {
    double time;
    std::uint64_t key;  // push sequence << kSlotBits | payload slot
  };
  // Sequences are unique, so the slot bits never decide.
  static bool before(const Node& a, const Node& b) { return a.time != b.time ? a.time < b.time : a.key < b.key; }

  std::vector<Node> heap_;
  std::vector<Payload> payloads_;
  std::vector<std::uint32_t> free_;
  std::uint64_t sequence_ = 0;
};

}  // namespace tpuemu::ici
