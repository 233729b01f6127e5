// The Mxu front end (mxu/mxu.hpp), plain C++: arrays narrower than a vreg,
// the MxuTiming model at its edges (a cycle early / on time), and what an
// ArrayBackend gets and refuses.
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mxu/mxu.hpp"

using namespace tpuemu;
using mxu::Mxu;
using mxu::MxuTiming;
using vpu::kLanes;
using vpu::kSublanes;

namespace {

// edu's 8x8 timing: one weight row per cycle, latch wave 2 x 8 - 1, latency 2 x 8 + 8.
constexpr MxuTiming kEdu{8, 8, 15, 24};

vpu::Vreg filled(float value) {
  vpu::Vreg v{};
  for (std::size_t i = 0; i < kSublanes * kLanes; ++i) v.set_f32(i, value);
  return v;
}

struct FakeBackend final : mxu::ArrayBackend {
  std::vector<std::uint64_t> push_starts, feeds;
  std::vector<bool> latches;
  std::optional<std::uint64_t> ready;
  void push_weights(const vpu::Vreg&, std::uint64_t, std::uint64_t start) override { push_starts.push_back(start); }
  void multiply(const vpu::Vreg&, bool latch, std::uint64_t, std::uint64_t feed) override {
    feeds.push_back(feed);
    latches.push_back(latch);
  }
  [[nodiscard]] std::optional<std::uint64_t> oldest_ready_cycle() const override { return ready; }
  vpu::Vreg take_oldest() override { return filled(7.0F); }
  [[nodiscard]] std::string name() const override { return "the fake array"; }
  [[nodiscard]] std::optional<std::string> failure() const override { return std::nullopt; }
};

}  // namespace

TEST_CASE("mxu 8x8: reads K from lanes 0..7 only and writes columns 0..7 only", "[mxu]") {
  Mxu m(8, 8, kEdu);
  // Weights: K row k, column c = k + 1 in lanes 0..7; lanes 8.. hold 1000 (not wired).
  vpu::Vreg w = filled(1000.0F);
  for (std::size_t k = 0; k < 8; ++k) {
    for (std::size_t c = 0; c < 8; ++c) w.set_f32(k * kLanes + c, static_cast<float>(k + 1));
  }
  REQUIRE_FALSE(m.push_weights(w, false, 0));
  vpu::Vreg lhs = filled(1000.0F);  // lanes 8.. of the LHS are not wired either
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t k = 0; k < 8; ++k) lhs.set_f32(r * kLanes + k, 1.0F);
  }
  REQUIRE_FALSE(m.matmul(lhs, nullptr, true, 0));
  const vpu::Vreg out = m.pop();
  for (std::size_t r = 0; r < kSublanes; ++r) {
    for (std::size_t c = 0; c < kLanes; ++c) CHECK(out.f32(r * kLanes + c) == (c < 8 ? 36.0F : 0.0F));
  }
}

TEST_CASE("mxu 16x16: a multiply needs both weight pushes, one covers K rows 0..7 only", "[mxu]") {
  Mxu m(16, 8, kEdu);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  const auto fault = m.matmul(filled(1.0F), nullptr, true, 20);
  REQUIRE(fault);
  CHECK(fault->message.find("cover K rows 0..7 but the multiply uses K lanes up to 15") != std::string::npos);
  CHECK_THROWS_AS(Mxu(129, 8, kEdu), std::invalid_argument);
  CHECK_THROWS_AS(Mxu(0, 8, kEdu), std::invalid_argument);
}

TEST_CASE("mxu timing: a push holds the weight path push_cycles, a latch waits for it", "[mxu][timing]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 100));  // rows 100..107
  // Issued one cycle after the push, the latching row enters after its last weight row.
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 101));
  CHECK(b.feeds.back() == 108);
  CHECK(m.last_feed_cycle == 108);
  CHECK(m.next_matmul_cycle == 116);
  // The result is ready latency after its feed (edge case checked below).
  m.attach_backend(nullptr);
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, false, 116));
  CHECK(*m.head_ready_cycle(116) == 108 + 24);
}

TEST_CASE("mxu timing: pushes after a latch wait latch_wave_cycles from its first row", "[mxu][timing]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 8));  // latch row at 8: the wave blocks pushes until 23
  REQUIRE_FALSE(m.push_weights(filled(2.0F), false, 9));
  CHECK(b.push_starts.back() == 8 + 15);
  // A plain multiply neither waits for weights nor starts a wave.
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, false, 16));
  CHECK(b.feeds.back() == 16);
  REQUIRE_FALSE(m.push_weights(filled(3.0F), false, 40));
  CHECK(b.push_starts.back() == 40);
}

TEST_CASE("mxu timing: v5e-like timing (push 1, no wave) keeps back-to-back issue", "[mxu][timing]") {
  Mxu m(128, 64, MxuTiming{8, 1, 0, 264});
  for (int p = 0; p < 16; ++p) REQUIRE_FALSE(m.push_weights(filled(1.0F), false, static_cast<std::uint64_t>(p)));
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 16));
  CHECK(m.last_feed_cycle == 16);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 17));  // double buffering: at once
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, false, 24));
  CHECK(m.last_feed_cycle == 24);
  CHECK(*m.head_ready_cycle(24) == 16 + 264);
}

TEST_CASE("mxu backend: results and their cycle come from the array, one cycle early polls", "[mxu][timing]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  REQUIRE_FALSE(m.matmul(filled(1.0F), nullptr, true, 8));
  CHECK(b.latches == std::vector<bool>{true});
  // Not produced yet: ask again next cycle.
  CHECK(*m.head_ready_cycle(30) == 31);
  b.ready = 32;
  CHECK(*m.head_ready_cycle(31) == 32);
  CHECK(m.pop().f32(0) == 7.0F);
  CHECK_FALSE(m.head_ready_cycle(33).has_value());
}

TEST_CASE("mxu backend: masked multiplies and transposed pushes are refused by name", "[mxu]") {
  Mxu m(8, 8, kEdu);
  FakeBackend b;
  m.attach_backend(&b);
  const auto push = m.push_weights(filled(1.0F), true, 0);
  REQUIRE(push);
  CHECK(push->message.find("the fake array loads weights by rows") != std::string::npos);
  REQUIRE_FALSE(m.push_weights(filled(1.0F), false, 0));
  vpu::Vmask mask{};
  const auto multiply = m.matmul(filled(1.0F), &mask, true, 8);
  REQUIRE(multiply);
  CHECK(multiply->message.find("the fake array has no K mask") != std::string::npos);
}
