// ici::EventQueue against std::priority_queue over (time, push counter): the
// same order, ties in push order, with pops interleaved with pushes.
#include <catch2/catch.hpp>
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
