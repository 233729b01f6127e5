// SingleThreadRc (common/single_thread_rc.hpp): counts, copies, moves and
// the one destruction of the shared object.
#include <catch2/catch.hpp>
#include <cstdint>
#include <utility>

#include "common/single_thread_rc.hpp"

namespace {
struct Counted {
  explicit Counted(int& destroyed, int v) : destroyed_(&destroyed), value(v) {}
  Counted(Counted&& other) noexcept : destroyed_(std::exchange(other.destroyed_, nullptr)), value(other.value) {}
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  Counted& operator=(Counted&&) = delete;
  ~Counted() {
    if (destroyed_ != nullptr) ++*destroyed_;
  }
  int* destroyed_;
  int value;
};
}  // namespace

TEST_CASE("SingleThreadRc counts its handles and destroys the object with the last", "[common]") {
  int destroyed = 0;
  {
    tpuemu::SingleThreadRc<Counted> empty;
    CHECK_FALSE(empty);
    CHECK(empty.use_count() == 0);
    CHECK(empty.get() == nullptr);

    auto a = tpuemu::SingleThreadRc<Counted>::make(destroyed, 7);
    CHECK(a.use_count() == 1);
    CHECK(a->value == 7);
    auto b = a;  // copy
    CHECK(a.use_count() == 2);
    CHECK(b.get() == a.get());
    auto c = std::move(b);  // move: the count stays
    CHECK_FALSE(b);
    CHECK(c.use_count() == 2);
    const auto& same = c;
    c = same;  // self-assignment keeps it
    CHECK(c.use_count() == 2);
    empty = c;  // copy-assign into an empty handle
    CHECK(a.use_count() == 3);
    c.reset();
    CHECK(a.use_count() == 2);
    auto other = tpuemu::SingleThreadRc<Counted>::make(destroyed, 9);
    empty = other;  // drops one handle of the first object
    CHECK(a.use_count() == 1);
    CHECK(other.use_count() == 2);
    CHECK(destroyed == 0);
    a = std::move(other);  // the first object's last handle: destroyed
    CHECK(destroyed == 1);
    CHECK(a->value == 9);
    CHECK(a.use_count() == 2);
  }
  CHECK(destroyed == 2);
}

TEST_CASE("SingleThreadRc keeps its count off the value's cache lines", "[common]") {
  auto h = tpuemu::SingleThreadRc<std::uint64_t>::make(std::uint64_t{5});
  CHECK(reinterpret_cast<std::uintptr_t>(h.get()) % 64 == 0);
  CHECK(*h == 5);
}
