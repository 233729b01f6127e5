// A time-ordered event queue for the network's plain-C++ event loop: a
// timing wheel of one-cycle buckets for the next kWheelCycles cycles (a push
// is an append), a 4-ary min-heap for the bucket being drained, and an
// overflow heap for events further ahead. A node holds its payload (time,
// push sequence, payload): draining a bucket reads it in order, where a
// payload kept apart in a slab cost a cache miss per event on large pods.
//
// Contract: events leave in (time, push order) order - equal times in the
// order they were pushed - exactly as a std::priority_queue over (time, a
// push counter) would give them, for any push times (the wheel assumes but
// does not need that pushes are not earlier than the last pop). Times are
// cycles >= 0. Payloads are trivially copyable.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace tpuemu::ici {

template <typename Payload>
class EventQueue {
 public:
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::size_t size() const { return size_; }
  // Contract for top_time/top/pop: !empty(). The earliest event is always in
  // the near heap (invariant restored by push and pop).
  [[nodiscard]] double top_time() const { return near_.front().time; }
  [[nodiscard]] const Payload& top() const { return near_.front().payload; }

  void push(double time, const Payload& payload) {
    const Node node{time, sequence_++, payload};
    const std::uint64_t bucket = bucket_of(time);
    if (size_ == 0) current_ = bucket;  // an empty queue starts its window here
    ++size_;
    if (bucket <= current_) {
      heap_push(near_, node);
    } else if (bucket - current_ < kWheelCycles) {
      const std::size_t index = bucket & (kWheelCycles - 1);
      append(wheel_[index], node);
      mark(index);
    } else {
      heap_push(far_, node);
    }
  }

  void pop() {
    heap_pop(near_);
    --size_;
    if (near_.empty() && size_ > 0) refill();
  }

 private:
  static_assert(std::is_trivially_copyable_v<Payload>);
  static constexpr std::size_t kArity = 4;
  // A power of two, 64^3 at most (three bitmap levels). Long enough that
  // packets queued behind a backed-up link (tens of thousands of cycles
  // ahead) stay out of the overflow heap.
  static constexpr std::uint64_t kWheelCycles = std::uint64_t{1} << 18;
  struct Node {
    double time;
    std::uint64_t sequence;  // push order
    Payload payload;
  };
  static bool before(const Node& a, const Node& b) {
    return a.time != b.time ? a.time < b.time : a.sequence < b.sequence;
  }
  static std::uint64_t bucket_of(double time) {
    constexpr double kLast = 4.0e18;  // far beyond any run; keeps the conversion defined
    return time > 0 ? static_cast<std::uint64_t>(std::floor(std::min(time, kLast))) : 0;
  }

  static void heap_push(std::vector<Node>& heap, const Node& node) {
    std::size_t i = heap.size();
    heap.push_back(node);
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (!before(node, heap[parent])) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = node;
  }

  static void heap_pop(std::vector<Node>& heap) {
    const Node last = heap.back();
    heap.pop_back();
    const std::size_t n = heap.size();
    if (n == 0) return;
    std::size_t i = 0;
    for (;;) {
      const std::size_t first = i * kArity + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t end = first + kArity < n ? first + kArity : n;
      for (std::size_t c = first + 1; c < end; ++c) {
        if (before(heap[c], heap[best])) best = c;
      }
      if (!before(heap[best], last)) break;
      heap[i] = heap[best];
      i = best;
    }
    heap[i] = last;
  }

  // The near heap ran dry: move the window to the earliest bucket that holds
  // an event (in the wheel or, if earlier, the overflow heap) and drain it
  // into the near heap.
  void refill() {
    std::uint64_t next = UINT64_MAX;
    if (const auto offset = next_occupied()) next = current_ + *offset;
    if (!far_.empty()) next = std::min(next, bucket_of(far_.front().time));
    current_ = next;
    const std::size_t index = next & (kWheelCycles - 1);
    if ((occupied_[index / 64] >> (index % 64) & 1U) != 0) {
      drain_into_near(wheel_[index]);
      unmark(index);
    }
    while (!far_.empty() && bucket_of(far_.front().time) <= current_) {
      heap_push(near_, far_.front());
      heap_pop(far_);
    }
  }

  // A bucket is a list of fixed-size chunks from one pool: memory follows
  // the events pending, not the most a bucket ever held (vectors per bucket
  // kept their capacity: 2^18 of them grew to hundreds of MiB on large pods).
  // Chunk 0 is never used: index 0 means "none", so that an empty bucket is
  // all zero bytes and the wheel can live in an anonymous mapping, whose pages cost
  // nothing until a bucket is used (most runs touch a few of the 2^18).
  static constexpr std::uint32_t kChunkNodes = 7;
  static constexpr std::uint32_t kNoChunk = 0;
  struct Chunk {
    std::array<Node, kChunkNodes> nodes;
    std::uint32_t next = kNoChunk;  // the bucket's next chunk, or the free list's
    std::uint32_t count = 0;
  };
  struct Bucket {
    std::uint32_t head = kNoChunk;
    std::uint32_t tail = kNoChunk;
  };
  std::uint32_t new_chunk() {
    std::uint32_t c = free_chunks_;
    if (c != kNoChunk) {
      free_chunks_ = chunks_[c].next;
    } else {
      if (chunks_.empty()) chunks_.emplace_back();  // the unused chunk 0
      if (chunks_.size() >= UINT32_MAX) throw std::length_error("network event queue: too many pending events");
      c = static_cast<std::uint32_t>(chunks_.size());
      chunks_.emplace_back();
    }
    chunks_[c].next = kNoChunk;
    chunks_[c].count = 0;
    return c;
  }
  void append(Bucket& b, const Node& node) {
    if (b.tail == kNoChunk || chunks_[b.tail].count == kChunkNodes) {
      const std::uint32_t c = new_chunk();
      if (b.tail == kNoChunk) {
        b.head = c;
      } else {
        chunks_[b.tail].next = c;
      }
      b.tail = c;
    }
    Chunk& chunk = chunks_[b.tail];
    chunk.nodes[chunk.count++] = node;
  }
  // Moves a bucket's nodes (in push order) into the near heap and its chunks to the free list.
  void drain_into_near(Bucket& b) {
    for (std::uint32_t c = b.head; c != kNoChunk;) {
      const Chunk& chunk = chunks_[c];
      for (std::uint32_t i = 0; i < chunk.count; ++i) heap_push(near_, chunk.nodes[i]);
      const std::uint32_t next = chunk.next;
      chunks_[c].next = free_chunks_;
      free_chunks_ = c;
      c = next;
    }
    b = Bucket{};
  }

  // Occupancy of the wheel's buckets in three levels: bit i of occupied_
  // (bucket i), of summary_ (occupied_ word i non-zero), of top_ (summary_
  // word i non-zero).
  void mark(std::uint64_t index) {
    occupied_[index / 64] |= std::uint64_t{1} << (index % 64);
    summary_[index / 4096] |= std::uint64_t{1} << (index / 64 % 64);
    top_ |= std::uint64_t{1} << (index / 4096);
  }
  void unmark(std::uint64_t index) {
    occupied_[index / 64] &= ~(std::uint64_t{1} << (index % 64));
    if (occupied_[index / 64] != 0) return;
    summary_[index / 4096] &= ~(std::uint64_t{1} << (index / 64 % 64));
    if (summary_[index / 4096] == 0) top_ &= ~(std::uint64_t{1} << (index / 4096));
  }
  static constexpr std::uint64_t kNone = UINT64_MAX;
  // The first occupied bucket index >= from (no wrap), or kNone.
  [[nodiscard]] std::uint64_t first_occupied_from(std::uint64_t from) const {
    if (from >= kWheelCycles) return kNone;
    const std::uint64_t w = from / 64;
    if (const std::uint64_t word = occupied_[w] >> (from % 64); word != 0)
      return from + static_cast<std::uint64_t>(std::countr_zero(word));
    // Later words of the same summary word, then later summary words.
    const std::uint64_t next_word = w + 1;
    if (next_word % 64 != 0) {
      if (const std::uint64_t bits = summary_[w / 64] >> (next_word % 64); bits != 0) {
        const std::uint64_t ww = next_word + static_cast<std::uint64_t>(std::countr_zero(bits));
        return ww * 64 + static_cast<std::uint64_t>(std::countr_zero(occupied_[ww]));
      }
    }
    const std::uint64_t next_summary = w / 64 + 1;
    if (next_summary >= kSummaryWords) return kNone;
    const std::uint64_t bits = top_ >> next_summary;
    if (bits == 0) return kNone;
    const std::uint64_t sw = next_summary + static_cast<std::uint64_t>(std::countr_zero(bits));
    const std::uint64_t ww = sw * 64 + static_cast<std::uint64_t>(std::countr_zero(summary_[sw]));
    return ww * 64 + static_cast<std::uint64_t>(std::countr_zero(occupied_[ww]));
  }
  // Offset (1..kWheelCycles-1) from current_ of the first occupied bucket:
  // from the bucket after current_'s to the end of the wheel, then from its
  // start (current_'s own bucket is always empty: its events are near).
  [[nodiscard]] std::optional<std::uint64_t> next_occupied() const {
    constexpr std::uint64_t kMask = kWheelCycles - 1;
    const std::uint64_t start = (current_ + 1) & kMask;
    std::uint64_t index = first_occupied_from(start);
    if (index == kNone) index = first_occupied_from(0);
    if (index == kNone) return std::nullopt;
    const std::uint64_t offset = ((index - start) & kMask) + 1;
    if (offset < kWheelCycles) return offset;
    return std::nullopt;
  }

  std::vector<Node> near_;  // events of buckets <= current_
  // bucket b at b % kWheelCycles, current_ < b < current_ + kWheelCycles
  // The wheel is an anonymous mapping, not calloc'd: glibc's calloc clears
  // reused heap memory byte by byte, which touched all 2 MiB on every run.
  struct UnmapWheel {
    void operator()(Bucket* wheel) const { (void)munmap(wheel, kWheelCycles * sizeof(Bucket)); }
  };
  static_assert(std::is_trivially_copyable_v<Bucket> && std::is_trivially_destructible_v<Bucket>);
  std::unique_ptr<Bucket[], UnmapWheel> wheel_{[] {
    // Fresh anonymous pages are zeros: every bucket empty (kNoChunk == 0).
    void* wheel = mmap(nullptr, kWheelCycles * sizeof(Bucket), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (wheel == MAP_FAILED) throw std::bad_alloc();
    return static_cast<Bucket*>(wheel);
  }()};
  std::vector<Chunk> chunks_;
  std::uint32_t free_chunks_ = kNoChunk;
  static constexpr std::uint64_t kWords = kWheelCycles / 64;
  static constexpr std::uint64_t kSummaryWords = (kWords + 63) / 64;
  static_assert(kWheelCycles >= 4096 && kSummaryWords <= 64);
  std::vector<std::uint64_t> occupied_ = std::vector<std::uint64_t>(kWords);
  std::array<std::uint64_t, kSummaryWords> summary_{};
  std::uint64_t top_ = 0;
  std::vector<Node> far_;  // buckets >= current_ + kWheelCycles when pushed
  std::uint64_t current_ = 0;
  std::size_t size_ = 0;
  std::uint64_t sequence_ = 0;
};

}  // namespace tpuemu::ici
