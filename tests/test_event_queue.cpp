// ici::EventQueue against std::priority_queue over (time, push counter): the
// same order, ties in push order, with pops interleaved with pushes.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <queue>
#include <random>
#include <vector>

#include "ici/event_queue.hpp"

namespace {

struct Reference {
  double time;
  std::uint64_t order;
  int payload;
  bool operator>(const Reference& b) const { return time != b.time ? time > b.time : order > b.order; }
};

}  // namespace

TEST_CASE("event queue: (time, push order) like a priority queue, ties in push order", "[ici][event-queue]") {
  std::mt19937 rng(7);
  // Few distinct times, so most events tie; times never go below the last pop (as the network's).
  std::uniform_int_distribution<int> step(0, 3);
  std::uniform_int_distribution<int> action(0, 2);
  tpuemu::ici::EventQueue<int> queue;
  std::priority_queue<Reference, std::vector<Reference>, std::greater<>> reference;
  std::uint64_t order = 0;
  double now = 0;
  int next_payload = 0;
  std::vector<int> got;
  std::vector<int> want;
  for (int i = 0; i < 20000; ++i) {
    if (action(rng) != 0 || queue.empty()) {
      const double t = now + step(rng) * 0.5;
      queue.push(t, next_payload);
      reference.push({t, order++, next_payload});
      ++next_payload;
    } else {
      REQUIRE(queue.top_time() == reference.top().time);
      now = queue.top_time();
      got.push_back(queue.top());
      want.push_back(reference.top().payload);
      queue.pop();
      reference.pop();
    }
    REQUIRE(queue.size() == reference.size());
  }
  while (!queue.empty()) {
    got.push_back(queue.top());
    want.push_back(reference.top().payload);
    queue.pop();
    reference.pop();
  }
  CHECK(got == want);
  CHECK(got.size() == static_cast<std::size_t>(next_payload));
}

TEST_CASE("event queue: sparse and far times (wheel wrap, summary words, overflow heap)", "[ici][event-queue]") {
  // Steps up to many wheel lengths (4096 cycles): buckets far apart, words of
  // the occupancy bitmap empty between them, events beyond the wheel.
  struct Row {
    double max_step;
    unsigned seed;
  };
  for (const Row row : {Row{70.0, 1}, Row{700.0, 2}, Row{5000.0, 3}, Row{20000.0, 4}}) {
    INFO("max step " << row.max_step);
    std::mt19937 rng(row.seed);
    std::uniform_real_distribution<double> step(0.0, row.max_step);
    std::uniform_int_distribution<int> action(0, 2);
    tpuemu::ici::EventQueue<int> queue;
    std::priority_queue<Reference, std::vector<Reference>, std::greater<>> reference;
    std::uint64_t order = 0;
    double now = 0;
    for (int i = 0; i < 20000; ++i) {
      if (action(rng) == 0 || queue.empty()) {
        const double t = now + std::floor(step(rng));  // whole cycles: some ties
        queue.push(t, i);
        reference.push({t, order++, i});
      } else {
        REQUIRE(queue.top_time() == reference.top().time);
        REQUIRE(queue.top() == reference.top().payload);
        now = queue.top_time();
        queue.pop();
        reference.pop();
      }
    }
    while (!queue.empty()) {
      REQUIRE(queue.top() == reference.top().payload);
      queue.pop();
      reference.pop();
    }
  }
}
